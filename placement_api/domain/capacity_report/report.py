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
from placement_api.domain.capacity_report.figures import CloudFigures, summary_view
from placement_api.domain.capacity_report.flavor import Flavor, ResolvedFlavor, resolve_flavors
from placement_api.domain.capacity_report.layout import Layout
from placement_api.domain.capacity_report.snapshot import Snapshot, read_snapshot
from placement_api.domain.capacity_report.zones import ZoneMap

HOST, AGGREGATE, ZONE = "host", "aggregate", "az"
BREAKDOWNS = (HOST, AGGREGATE, ZONE)


@dataclass(frozen=True)
class _Group:
    """An aggregate or zone: what the answer says of it before any flavor."""

    head: dict[str, Any]
    # Host positions, in name order.
    positions: list[int]
    resources: dict[str, dict[str, Any]]
    # Every host reaching a sharing provider its hosts reach is among them.
    closed: bool


def _summaries(sums: dict[str, list[Any]]) -> dict[str, dict[str, Any]]:
    return {name: summary_view(sums[name]) for name in sorted(sums)}


class ReportBuilder:
    """Reports for any number of flavors over one snapshot; the usage
    figures, host groups and their views are worked out once, and the
    hosts' views only when ``by`` asks for them."""

    def __init__(self, snapshot: Snapshot, zones: ZoneMap, by: Collection[str]) -> None:
        layout = self.layout = Layout(snapshot)
        figures = CloudFigures(layout)
        self.resource_classes = _summaries(figures.with_sharing(figures.sums()))
        uuids = snapshot.aggregate_uuids
        by_aggregate: dict[str, list[int]] = {}
        by_zone: dict[str, list[int]] = {}
        # Hosts in the same aggregates share their lists (never changed).
        placed_in: dict[frozenset[int], tuple[list[str], list[str]]] = {}
        self._tails: list[tuple[list[str], list[str]]] = []
        for position, root in enumerate(layout.hosts):  # in name order
            memberships = snapshot.aggregates_of.get(root, frozenset())
            tail = placed_in.get(memberships)
            if tail is None:
                aggregates = sorted(uuids[a] for a in memberships)
                tail = placed_in[memberships] = (aggregates, zones.zones_of(aggregates))
            for aggregate in tail[0]:
                by_aggregate.setdefault(aggregate, []).append(position)
            for zone in tail[1]:
                by_zone.setdefault(zone, []).append(position)
            self._tails.append(tail)
        self._views = figures.host_views() if HOST in by else []
        infos = {uuid: zones.info(uuid) for uuid in by_aggregate}
        self.aggregates = [
            self._make_group(
                {"uuid": uuid, "name": info.name, "availability_zone": info.availability_zone},
                by_aggregate[uuid],
                figures,
            )
            for uuid, info in sorted(
                infos.items(), key=lambda item: (item[1].name is None, item[1].name or "", item[0])
            )
        ]
        self.zones = [self._make_group({"name": z}, by_zone[z], figures) for z in sorted(by_zone)]
        self.sharing = [
            {
                "uuid": snapshot.named[p][0],
                "name": snapshot.named[p][1],
                "hosts": layout.served_count.get(p, 0),
                "resources": figures.sharing(p),
            }
            for p in sorted(snapshot.sharing, key=lambda p: snapshot.named[p][1])
        ]

    def _make_group(
        self, head: dict[str, Any], positions: list[int], figures: CloudFigures
    ) -> _Group:
        layout = self.layout
        every = len(positions) == len(layout.hosts)
        signatures = Counter(layout.signature_of[p] for p in positions)
        reached: Counter[int] = Counter()
        for signature, hosts in signatures.items():
            for shared in layout.signatures[signature]:
                reached[shared] += hosts
        closed = all(layout.served_count[s] == n for s, n in reached.items())
        resources = _summaries(figures.sums(None if every else positions))
        return _Group(head, positions, resources, closed)

    def report(
        self, flavor: ResolvedFlavor | None, by: Collection[str] = BREAKDOWNS
    ) -> dict[str, Any]:
        layout = self.layout
        counter = FlavorCounter(layout, flavor.group) if flavor is not None else None
        body: dict[str, Any] = {}
        if counter is not None:
            body["fits"] = counter.count(range(len(layout.hosts)), closed=True)
        body["counting"] = COUNTING
        body["resource_classes"] = self.resource_classes
        if HOST in by:
            body["hosts"] = self._hosts(counter)
        if AGGREGATE in by:
            body["aggregates"] = [self._group(g, counter) for g in self.aggregates]
        if ZONE in by:
            body["availability_zones"] = [self._group(g, counter) for g in self.zones]
        body["sharing_providers"] = self.sharing
        return body

    def _hosts(self, counter: FlavorCounter | None) -> list[dict[str, Any]]:
        named = self.layout.snapshot.named
        heads = [named[root] for root in self.layout.hosts]
        rows = zip(heads, self._tails, self._views, strict=True)
        if counter is None:
            return [
                {"uuid": u, "name": n, "aggregates": a, "availability_zones": z, "resources": r}
                for (u, n), (a, z), r in rows
            ]
        return [
            {
                "uuid": u,
                "name": n,
                "fits": fits,
                "aggregates": a,
                "availability_zones": z,
                "resources": r,
            }
            for ((u, n), (a, z), r), fits in zip(rows, counter.alone, strict=True)
        ]

    @staticmethod
    def _group(group: _Group, counter: FlavorCounter | None) -> dict[str, Any]:
        body = {**group.head, "hosts": len(group.positions)}
        if counter is not None:
            body["fits"] = counter.count(group.positions, group.closed)
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
        builder = ReportBuilder(await read_snapshot(session, trait_ids), zones, by)
        if not resolved:
            return {"": builder.report(None, by)}
        return {flavor.name: builder.report(flavor, by) for flavor in resolved}
