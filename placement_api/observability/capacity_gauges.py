"""The capacity report as Prometheus gauges, beside the exporter-compatible ones.

Per flavor of ``PLACEMENT_CAPACITY_FLAVORS_FILE``: instances that fit in
the cloud, per aggregate and per availability zone (hosts disabled or down
left out, and counted apart); per resource class:
capacity, used, free (cloud and per zone) and the overcommitted share. They
are computed from one capacity report per scrape interval: an object owned
by the app keeps them for ``PLACEMENT_CAPACITY_METRICS_INTERVAL`` seconds,
so the cost of a scrape is bounded however often Prometheus comes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain.capacity_report.report import AGGREGATE, ZONE, capacity_reports
from placement_api.services.capacity_sources import CapacitySources
from placement_api.serving.gc_policy import collector_paused

LOG = logging.getLogger(__name__)
PREFIX = "placement_capacity"


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=labels)


def _usage_families(report: dict[str, Any]) -> list[GaugeMetricFamily]:
    per_class = {
        key: _gauge(key, f"Cloud-wide {text} per resource class.", ["resource_class"])
        for key, text in (
            ("capacity", "capacity ((total - reserved) * allocation_ratio)"),
            ("used", "usage"),
            ("free", "free capacity (negative when over capacity)"),
            ("overcommitted_share", "share of usage beyond total - reserved"),
        )
    }
    for name, figures in report["resource_classes"].items():
        for key, family in per_class.items():
            family.add_metric([name], figures[key])
    zone_free = _gauge(
        "zone_free",
        "Free capacity per availability zone and resource class.",
        ["availability_zone", "resource_class"],
    )
    for zone in report["availability_zones"]:
        for name, figures in zone["resources"].items():
            zone_free.add_metric([zone["name"], name], figures["free"])
    unavailable = _gauge(
        "unavailable_hosts",
        "Hosts left out of every capacity gauge: disabled (COMPUTE_STATUS_DISABLED) or "
        "down (heartbeats missed); a host both is counted in each.",
        ["state"],
    )
    for state in ("disabled", "down"):
        unavailable.add_metric([state], report["unavailable"][state])
    return [*per_class.values(), zone_free, unavailable]


def _fits_families(reports: dict[str, dict[str, Any]]) -> list[GaugeMetricFamily]:
    total = _gauge("fits", "Instances of the flavor that still fit in the cloud.", ["flavor"])
    by_aggregate = _gauge(
        "aggregate_fits",
        "Instances of the flavor that still fit in the aggregate.",
        ["flavor", "aggregate", "aggregate_name", "availability_zone"],
    )
    by_zone = _gauge(
        "zone_fits",
        "Instances of the flavor that still fit in the availability zone.",
        ["flavor", "availability_zone"],
    )
    more = _gauge(
        "unavailable_fits",
        "Instances of the flavor that would fit in addition on hosts disabled or down.",
        ["flavor"],
    )
    for flavor, report in reports.items():
        total.add_metric([flavor], report["fits"])
        more.add_metric([flavor], report["unavailable"]["fits"])
        for aggregate in report["aggregates"]:
            labels = [aggregate["name"] or "", aggregate["availability_zone"] or ""]
            by_aggregate.add_metric([flavor, aggregate["uuid"], *labels], aggregate["fits"])
        for zone in report["availability_zones"]:
            by_zone.add_metric([flavor, zone["name"]], zone["fits"])
    return [total, more, by_aggregate, by_zone]


class CapacityGauges:
    """The gauges of the last report, recomputed when older than the interval."""

    def __init__(
        self,
        sources: CapacitySources,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        missed_intervals: int,
    ) -> None:
        self._sources = sources
        self._interval = interval
        self._missed_intervals = missed_intervals
        self._clock = clock
        self._families: list[Metric] = []
        self._computed_at: float | None = None
        # Concurrent scrapes wait for one computation instead of each running it.
        self._lock = asyncio.Lock()

    async def collector(self, factory: SessionFactory) -> Collector:
        families = await self._current(factory)
        return _Fixed(families)

    async def _current(self, factory: SessionFactory) -> list[Metric]:
        async with self._lock:
            at = self._computed_at
            if at is None or self._clock() - at >= self._interval:
                self._families = await self._compute(factory)
                self._computed_at = self._clock()
            return self._families

    async def _compute(self, factory: SessionFactory) -> list[Metric]:
        skipped: list[str] = []
        # As for GET /capacity: the report's objects are many, none in a cycle.
        async with unit_of_work(factory, write=False) as session:
            with collector_paused():
                reports = await capacity_reports(
                    session,
                    self._sources.flavors,
                    self._sources.zones,
                    (AGGREGATE, ZONE),
                    skipped,
                    missed_intervals=self._missed_intervals,
                )
        for reason in skipped:
            LOG.warning("capacity gauges leave out flavor %s", reason)
        usage = _usage_families(next(iter(reports.values())))
        fitting = {name: report for name, report in reports.items() if "fits" in report}
        return [*usage, *(_fits_families(fitting) if fitting else [])]


class _Fixed(Collector):
    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Metric]:
        return iter(self._families)
