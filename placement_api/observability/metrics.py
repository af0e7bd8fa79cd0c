"""The service's Prometheus metrics and their exposition.

Metrics live in prometheus-client's default registry. Under ``serve`` with
metrics enabled, ``PROMETHEUS_MULTIPROC_DIR`` is set before any worker
imports prometheus-client, so every worker writes its samples to that
directory and a scrape of any worker reads them all
(``MultiProcessCollector``). Gauges therefore say how worker values combine.

The capacity gauges copy openstack-exporter's Placement metrics (names and
the ``hostname``/``resourcetype`` labels), so dashboards built for it work
unchanged. They are read at scrape time from ``inventories`` alone (its
``used`` column is kept equal to the sum of allocations), never by scanning
allocations.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.domain.inventory_figures import InventoryFigures
from placement_api.observability.multiproc import MULTIPROC_DIR_VARIABLE

REQUESTS = Counter(
    "placement_http_requests_total",
    "HTTP requests answered, by route template, method and status.",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "placement_http_request_duration_seconds",
    "Time from receiving a request to sending the end of its answer.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
IN_FLIGHT = Gauge(
    "placement_http_requests_in_flight",
    "Requests being handled now.",
    multiprocess_mode="livesum",
)
CONFLICTS = Counter(
    "placement_conflicts_total",
    "409 answers by error code and, for placement.concurrent_update, conflict kind.",
    ["code", "conflict"],
)
CANDIDATES = Histogram(
    "placement_allocation_candidates_returned",
    "Allocation requests returned by one GET /allocation_candidates.",
    buckets=(0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000),
)
CANDIDATES_ANSWERED = Counter(
    "placement_allocation_candidates_answered_total",
    "GET /allocation_candidates answers by source: the worker's provider index "
    "(flat clouds) or the database.",
    ["source"],
)
POOL_IN_USE = Gauge(
    "placement_db_pool_connections_in_use",
    "Database connections checked out of the pool.",
    multiprocess_mode="livesum",
)
POOL_CAPACITY = Gauge(
    "placement_db_pool_capacity",
    "Connections the pools may hold (size plus overflow; 0 for SQLite, which has no pool).",
    multiprocess_mode="livesum",
)
CONNECTION_WAIT_SECONDS = Histogram(
    "placement_db_connection_wait_seconds",
    "Time a request waited to begin its transaction: a pool connection "
    "and, on SQLite, the write lock.",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30),
)


class CapacityCollector(Collector):
    """openstack-exporter's Placement gauges over rows read for one scrape."""

    def __init__(self, rows: Sequence[InventoryFigures]) -> None:
        self._rows = rows

    def collect(self) -> Iterable[Metric]:
        labels = ["hostname", "resourcetype"]
        families = {
            "total": GaugeMetricFamily(
                "openstack_placement_resource_total", "placement resource total", labels=labels
            ),
            "usage": GaugeMetricFamily(
                "openstack_placement_resource_usage", "placement resource usage", labels=labels
            ),
            "reserved": GaugeMetricFamily(
                "openstack_placement_resource_reserved",
                "placement resource reserved",
                labels=labels,
            ),
            "ratio": GaugeMetricFamily(
                "openstack_placement_resource_allocation_ratio",
                "placement resource allocation ratio",
                labels=labels,
            ),
            "generation": GaugeMetricFamily(
                "openstack_placement_resource_generation",
                "placement resource provider generation",
                labels=labels,
            ),
        }
        for row in self._rows:
            key = [row.hostname, row.resource_class]
            families["total"].add_metric(key, row.total)
            families["usage"].add_metric(key, row.used)
            families["reserved"].add_metric(key, row.reserved)
            families["ratio"].add_metric(key, row.allocation_ratio)
            families["generation"].add_metric(key, row.generation)
        return iter(families.values())


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_DIR_VARIABLE))


class UpCollector(Collector):
    """openstack-exporter's ``openstack_placement_up``: 1 while the database answers."""

    def __init__(self, up: bool) -> None:
        self._up = up

    def collect(self) -> Iterable[Metric]:
        yield GaugeMetricFamily("openstack_placement_up", "up", value=1 if self._up else 0)


def exposition(
    capacity: Sequence[InventoryFigures], *extra: Collector, up: bool
) -> tuple[bytes, str]:
    """The text format body and its content type: process metrics, whether the
    database answered (``up``), capacity (and the ``extra`` collectors: the
    capacity report's gauges)."""
    registry = CollectorRegistry()
    if multiprocess_enabled():
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        registry.register(_Forward(REGISTRY))
    registry.register(UpCollector(up))
    registry.register(CapacityCollector(capacity))
    for collector in extra:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _Forward(Collector):
    """The default registry's metrics, inside a per-scrape registry."""

    def __init__(self, source: CollectorRegistry) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        yield from self._source.collect()


def mark_worker_dead(pid: int) -> None:
    if multiprocess_enabled():
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def observe_pool(engine: AsyncEngine) -> None:
    """Count the engine's checked-out connections."""

    @event.listens_for(engine.sync_engine, "checkout")
    def _checked_out(*_args: object) -> None:
        POOL_IN_USE.inc()

    @event.listens_for(engine.sync_engine, "checkin")
    def _checked_in(*_args: object) -> None:
        POOL_IN_USE.dec()
