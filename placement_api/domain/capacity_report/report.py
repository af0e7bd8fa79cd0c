"""The capacity report: usage figures and, for a flavor, how many instances fit,
in total and by host, aggregate and availability zone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates.collector import collector_paused
from placement_api.domain.capacity_report.counting import COUNTING, FlavorCounter
from placement_api.domain.capacity_report.figures import (
    ClassFigures,
    Figures,
    host_view,
    summary_view,
    summed,
)
from placement_api.domain.capacity_report.flavor import Flavor, ResolvedFlavor, resolve_flavors
from placement_api.domain.capacity_report.snapshot import Snapshot, read_snapshot
from placement_api.domain.capacity_report.zones import ZoneMap

HOST, AGGREGATE, ZONE = "host", "aggregate", "az"
BREAKDOWNS = (HOST, AGGREGATE, ZONE)


@dataclass(frozen=True)
class _Group:
    """An aggregate or zone: what the answer says of it before any flavor."""

    head: dict[str, Any]
    roots: list[int]
    resources: dict[str, dict[str, Any]]
    # Every host reaching a sharing provider its hosts reach is among them.
    closed: bool


class ReportBuilder:
    """Reports for any number of flavors over one snapshot; the usage
    figures, host groups and their views are worked out once."""

    def __init__(self, snapshot: Snapshot, zones: ZoneMap) -> None:
        self.snapshot = snapshot
        self.hosts = snapshot.hosts
        figures = self._figures(snapshot)
        self._host_figures = figures["owners"]
        self._all_hosts = figures["hosts"].get(0, {})
        sharing = {p: self._host_figures.pop(p, {}) for p in snapshot.sharing}
        self.resource_classes = summary_view(summed([self._all_hosts, *sharing.values()]))
        uuids = snapshot.aggregate_uuids
        self._host_tails: dict[int, dict[str, Any]] = {}
        by_aggregate: dict[str, list[int]] = {}
        by_zone: dict[str, list[int]] = {}
        for root in self.hosts:  # in name order, the order instances are placed in
            aggregates = sorted(uuids[a] for a in snapshot.aggregates_of.get(root, ()))
            host_zones = zones.zones_of(aggregates)
            for aggregate in aggregates:
                by_aggregate.setdefault(aggregate, []).append(root)
            for zone in host_zones:
                by_zone.setdefault(zone, []).append(root)
            self._host_tails[root] = {
                "aggregates": aggregates,
                "availability_zones": host_zones,
                "resources": host_view(self._host_figures.get(root, {})),
            }
        per_aggregate = {uuids[a]: found for a, found in figures["aggregates"].items()}
        infos = {uuid: zones.info(uuid) for uuid in by_aggregate}
        self.aggregates = [
            self._make_group(
                {"uuid": uuid, "name": info.name, "availability_zone": info.availability_zone},
                by_aggregate[uuid],
                per_aggregate.get(uuid, {}),
            )
            for uuid, info in sorted(
                infos.items(), key=lambda item: (item[1].name is None, item[1].name or "", item[0])
            )
        ]
        self.zones = []
        for zone in sorted(by_zone):
            naming = [a for a, info in infos.items() if info.availability_zone == zone]
            roots = by_zone[zone]
            if len(roots) == len(self.hosts):
                found = self._all_hosts
            elif naming and sum(len(by_aggregate[a]) for a in naming) == len(roots):
                # The zone's hosts are those of its aggregates, each in one.
                found = summed(per_aggregate.get(a, {}) for a in naming)
            else:
                found = summed(self._host_figures.get(r, {}) for r in roots)
            self.zones.append(self._make_group({"name": zone}, roots, found))
        self.sharing = self._sharing(sharing)

    def _make_group(self, head: dict[str, Any], roots: list[int], figures: Figures) -> _Group:
        snapshot = self.snapshot
        reached = Counter(s for r in roots for s in snapshot.shared_with.get(r, ()))
        closed = all(len(snapshot.serves[s]) == n for s, n in reached.items())
        return _Group(head, roots, summary_view(figures), closed)

    def _sharing(self, figures: dict[int, Figures]) -> list[dict[str, Any]]:
        snapshot, providers = self.snapshot, self.snapshot.providers
        served = Counter(s for root in self.hosts for s in snapshot.shared_with.get(root, ()))
        return [
            {
                "uuid": providers[p].uuid,
                "name": providers[p].name,
                "hosts": served[p],
                "resources": host_view(figures[p]),
            }
            for p in sorted(snapshot.sharing, key=lambda p: providers[p].name)
        ]

    @staticmethod
    def _figures(snapshot: Snapshot) -> dict[str, dict[int, Figures]]:
        """Per statement of the snapshot's figures: per group, its figures per class."""
        names = snapshot.class_names
        found: dict[str, dict[int, Figures]] = {}
        for statement, rows in snapshot.figure_rows.items():
            groups = found[statement] = {}
            for row in rows:
                groups.setdefault(row[1], {})[names[row[0]]] = ClassFigures.from_row(row)
        return found

    def report(
        self, flavor: ResolvedFlavor | None, by: Collection[str] = BREAKDOWNS
    ) -> dict[str, Any]:
        counter = FlavorCounter(self.snapshot, flavor.group) if flavor is not None else None
        body: dict[str, Any] = {}
        if counter is not None:
            body["fits"] = counter.count(self.hosts, closed=True)
        body["counting"] = COUNTING
        body["resource_classes"] = self.resource_classes
        if HOST in by:
            body["hosts"] = [self._host(root, counter) for root in self.hosts]
        if AGGREGATE in by:
            body["aggregates"] = [self._group(g, counter) for g in self.aggregates]
        if ZONE in by:
            body["availability_zones"] = [self._group(g, counter) for g in self.zones]
        body["sharing_providers"] = self.sharing
        return body

    def _host(self, root: int, counter: FlavorCounter | None) -> dict[str, Any]:
        provider = self.snapshot.providers[root]
        body: dict[str, Any] = {"uuid": provider.uuid, "name": provider.name}
        if counter is not None:
            body["fits"] = counter.alone.get(root, 0)
        return {**body, **self._host_tails[root]}

    @staticmethod
    def _group(group: _Group, counter: FlavorCounter | None) -> dict[str, Any]:
        body = {**group.head, "hosts": len(group.roots)}
        if counter is not None:
            body["fits"] = counter.count(group.roots, group.closed)
        body["resources"] = group.resources
        return body


async def capacity_reports(
    session: AsyncSession,
    flavors: Sequence[Flavor],
    zones: ZoneMap,
    by: Collection[str] = BREAKDOWNS,
    skipped: list[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per flavor name, its report; with no flavor, the usage figures under "".
    ``skipped``: see ``resolve_flavors``."""
    resolved = await resolve_flavors(session, flavors, skipped)
    trait_ids = frozenset().union(*(flavor.trait_ids for flavor in resolved))
    # Tens of thousands of rows and dicts, none in a cycle: the collector's
    # passes over them would cost as much as the work.
    with collector_paused():
        builder = ReportBuilder(await read_snapshot(session, trait_ids), zones)
        if not resolved:
            return {"": builder.report(None, by)}
        return {flavor.name: builder.report(flavor, by) for flavor in resolved}
