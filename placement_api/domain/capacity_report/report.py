"""The capacity report: usage figures and, for a flavor, how many instances fit,
in total and by host, aggregate and availability zone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.capacity_report.counting import COUNTING, FlavorCounter
from placement_api.domain.capacity_report.figures import (
    Figures,
    host_view,
    provider_figures,
    summary_view,
    summed,
)
from placement_api.domain.capacity_report.flavor import Flavor, ResolvedFlavor, resolve_flavors
from placement_api.domain.capacity_report.snapshot import Snapshot, read_snapshot
from placement_api.domain.capacity_report.zones import ZoneMap

HOST, AGGREGATE, ZONE = "host", "aggregate", "az"
BREAKDOWNS = (HOST, AGGREGATE, ZONE)


class ReportBuilder:
    """Reports for any number of flavors over one snapshot; the usage
    figures and the host groups are worked out once."""

    def __init__(self, snapshot: Snapshot, zones: ZoneMap) -> None:
        self.snapshot = snapshot
        self.zones = zones
        self.hosts = snapshot.hosts
        uuids = snapshot.aggregate_uuids
        self.host_aggregates = {
            root: sorted(uuids[a] for a in snapshot.aggregates_of.get(root, ()))
            for root in self.hosts
        }
        self.host_zones = {root: zones.zones_of(self.host_aggregates[root]) for root in self.hosts}
        self.by_aggregate: dict[str, list[int]] = {}
        self.by_zone: dict[str, list[int]] = {}
        for root in self.hosts:  # in name order, the order instances are placed in
            for aggregate in self.host_aggregates[root]:
                self.by_aggregate.setdefault(aggregate, []).append(root)
            for zone in self.host_zones[root]:
                self.by_zone.setdefault(zone, []).append(root)
        self.host_figures = {
            root: provider_figures(snapshot, snapshot.trees[root]) for root in self.hosts
        }
        self.sharing = sorted(snapshot.sharing, key=lambda p: snapshot.providers[p].name)
        self.sharing_figures = {p: provider_figures(snapshot, [p]) for p in self.sharing}
        self.served = Counter(s for root in self.hosts for s in snapshot.shared_with.get(root, ()))

    def _group_figures(self, roots: Sequence[int]) -> Figures:
        return summed(self.host_figures[root] for root in roots)

    def report(
        self, flavor: ResolvedFlavor | None, by: Collection[str] = BREAKDOWNS
    ) -> dict[str, Any]:
        counter = FlavorCounter(self.snapshot, flavor.group) if flavor is not None else None
        everything = summed([*self.host_figures.values(), *self.sharing_figures.values()])
        body: dict[str, Any] = {}
        if counter is not None:
            body["fits"] = counter.count(self.hosts)
        body["counting"] = COUNTING
        body["resource_classes"] = summary_view(everything)
        if HOST in by:
            body["hosts"] = [self._host(root, counter) for root in self.hosts]
        if AGGREGATE in by:
            body["aggregates"] = [
                self._aggregate(uuid, counter)
                for uuid in sorted(self.by_aggregate, key=self._aggregate_order)
            ]
        if ZONE in by:
            body["availability_zones"] = [
                self._group({"name": zone}, self.by_zone[zone], counter)
                for zone in sorted(self.by_zone)
            ]
        body["sharing_providers"] = [self._sharing(p) for p in self.sharing]
        return body

    def _aggregate_order(self, uuid: str) -> tuple[bool, str, str]:
        name = self.zones.info(uuid).name
        return (name is None, name or "", uuid)

    def _host(self, root: int, counter: FlavorCounter | None) -> dict[str, Any]:
        provider = self.snapshot.providers[root]
        body: dict[str, Any] = {"uuid": provider.uuid, "name": provider.name}
        if counter is not None:
            body["fits"] = counter.alone(root)
        body["aggregates"] = self.host_aggregates[root]
        body["availability_zones"] = self.host_zones[root]
        body["resources"] = host_view(self.host_figures[root])
        return body

    def _aggregate(self, uuid: str, counter: FlavorCounter | None) -> dict[str, Any]:
        info = self.zones.info(uuid)
        head = {"uuid": uuid, "name": info.name, "availability_zone": info.availability_zone}
        return self._group(head, self.by_aggregate[uuid], counter)

    def _group(
        self, head: dict[str, Any], roots: Sequence[int], counter: FlavorCounter | None
    ) -> dict[str, Any]:
        body = {**head, "hosts": len(roots)}
        if counter is not None:
            body["fits"] = counter.count(roots)
        body["resources"] = summary_view(self._group_figures(roots))
        return body

    def _sharing(self, provider_id: int) -> dict[str, Any]:
        provider = self.snapshot.providers[provider_id]
        return {
            "uuid": provider.uuid,
            "name": provider.name,
            "hosts": self.served[provider_id],
            "resources": host_view(self.sharing_figures[provider_id]),
        }


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
    builder = ReportBuilder(await read_snapshot(session, trait_ids), zones)
    if not resolved:
        return {"": builder.report(None, by)}
    return {flavor.name: builder.report(flavor, by) for flavor in resolved}
