"""The capacity report: usage figures and, for a flavor, how many instances fit,
in total and by host, aggregate and availability zone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.capacity_report.availability import (
    Unavailable,
    hosts_of,
    read_unavailable,
    without_hosts,
)
from placement_api.domain.capacity_report.counting import COUNTING, FlavorCounter
from placement_api.domain.capacity_report.figures import CloudFigures, Sums, merged, summaries
from placement_api.domain.capacity_report.flavor import Flavor, ResolvedFlavor, resolve_flavors
from placement_api.domain.capacity_report.layout import Layout
from placement_api.domain.capacity_report.snapshot import (
    Snapshot,
    read_consumer_counts,
    read_snapshot,
)
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


@dataclass
class _Members:
    """Hosts whose roots are in the same aggregates: they are in the same
    aggregates' and zones' breakdowns, so their sums are taken once."""

    positions: list[int]
    aggregates: list[str]
    zones: list[str]
    sums: Sums
    # Per signature (see Layout), how many of these hosts have it.
    signatures: Counter[int]


class ReportBuilder:
    """Reports for any number of flavors over one snapshot; the usage
    figures, host groups and their views are worked out once, and the
    hosts' views only when ``by`` asks for them."""

    def __init__(
        self,
        snapshot: Snapshot,
        zones: ZoneMap,
        by: Collection[str],
        unavailable: Unavailable | None = None,
        consumers: Mapping[int, int] | None = None,
    ) -> None:
        layout = self.layout = Layout(snapshot)
        unavailable = unavailable or Unavailable()
        consumers = consumers or {}
        # Per host position: whether it is disabled, whether it is down, its consumers.
        self._states = [
            (root in unavailable.disabled, root in unavailable.down, consumers.get(root, 0))
            for root in layout.hosts
        ]
        figures = CloudFigures(layout)
        uuids = snapshot.aggregate_uuids
        none: frozenset[int] = frozenset()
        keys = [snapshot.aggregates_of.get(root, none) for root in layout.hosts]
        positions: dict[frozenset[int], list[int]] = {}
        for position, key in enumerate(keys):  # in name order
            same = positions.get(key)
            if same is None:
                positions[key] = [position]
            else:
                same.append(position)
        members: dict[frozenset[int], _Members] = {}
        for key, hosts in positions.items():
            aggregates = sorted(uuids[a] for a in key)
            members[key] = _Members(
                hosts,
                aggregates,
                zones.zones_of(aggregates),
                figures.sums(hosts),
                Counter(layout.signature_of[p] for p in hosts),
            )
        # Hosts in the same aggregates share their lists (never changed).
        self._tails = [members[key] for key in keys]
        self._views = figures.host_views() if HOST in by else []
        self.resource_classes = summaries(
            merged([*(m.sums for m in members.values()), *figures.sharing_sums()])
        )
        in_aggregate: dict[str, list[_Members]] = {}
        in_zone: dict[str, list[_Members]] = {}
        for part in members.values():
            for aggregate in part.aggregates:
                in_aggregate.setdefault(aggregate, []).append(part)
            for zone in part.zones:
                in_zone.setdefault(zone, []).append(part)
        infos = {uuid: zones.info(uuid) for uuid in in_aggregate}
        self.aggregates = [
            self._make_group(
                {"uuid": uuid, "name": info.name, "availability_zone": info.availability_zone},
                in_aggregate[uuid],
            )
            for uuid, info in sorted(
                infos.items(), key=lambda item: (item[1].name is None, item[1].name or "", item[0])
            )
        ]
        self.zones = [self._make_group({"name": z}, in_zone[z]) for z in sorted(in_zone)]
        self.sharing = [
            {
                "uuid": snapshot.named[p][0],
                "name": snapshot.named[p][1],
                "hosts": layout.served_count.get(p, 0),
                "resources": figures.sharing(p),
            }
            for p in sorted(snapshot.sharing, key=lambda p: snapshot.named[p][1])
        ]

    def _make_group(self, head: dict[str, Any], parts: list[_Members]) -> _Group:
        layout = self.layout
        positions = parts[0].positions
        if len(parts) > 1:
            positions = sorted(p for part in parts for p in part.positions)
        reached: Counter[int] = Counter()
        for part in parts:
            for signature, hosts in part.signatures.items():
                for shared in layout.signatures[signature]:
                    reached[shared] += hosts
        closed = all(layout.served_count[s] == n for s, n in reached.items())
        resources = summaries(merged(part.sums for part in parts))
        return _Group(head, positions, resources, closed)

    def fits(self, flavor: ResolvedFlavor) -> int:
        """How many instances of the flavor fit in the whole cloud."""
        counter = FlavorCounter(self.layout, flavor.group)
        return counter.count(range(len(self.layout.hosts)), closed=True)

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
        rows = zip(heads, self._states, self._tails, self._views, strict=True)
        if counter is None:
            return [
                {
                    "uuid": u,
                    "name": n,
                    "disabled": disabled,
                    "down": down,
                    "consumers": consumers,
                    "aggregates": m.aggregates,
                    "availability_zones": m.zones,
                    "resources": r,
                }
                for (u, n), (disabled, down, consumers), m, r in rows
            ]
        return [
            {
                "uuid": u,
                "name": n,
                "fits": fits,
                "disabled": disabled,
                "down": down,
                "consumers": consumers,
                "aggregates": m.aggregates,
                "availability_zones": m.zones,
                "resources": r,
            }
            for ((u, n), (disabled, down, consumers), m, r), fits in zip(
                rows, counter.alone, strict=True
            )
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
    *,
    missed_intervals: int,
    include_unavailable: bool = False,
) -> dict[str, dict[str, Any]]:
    """Per flavor name, its report; with no flavor, the usage figures under "".
    Hosts disabled or down (``missed_intervals``: the heartbeats' rule) are left
    out unless ``include_unavailable``; either way the answer's ``unavailable``
    says how many there are and how many instances fit only on them.
    ``skipped``: see ``resolve_flavors``."""
    resolved = await resolve_flavors(session, flavors, skipped)
    trait_ids = frozenset().union(*(flavor.trait_ids for flavor in resolved))
    snapshot = await read_snapshot(session, trait_ids)
    unavailable = hosts_of(snapshot, await read_unavailable(session, missed_intervals))
    available = without_hosts(snapshot, unavailable.hosts)
    consumers = await read_consumer_counts(session) if HOST in by else None
    builder = ReportBuilder(
        snapshot if include_unavailable else available, zones, by, unavailable, consumers
    )
    # The other side, for the instances only unavailable hosts could take.
    other = None
    if unavailable.hosts and resolved:
        other = ReportBuilder(available if include_unavailable else snapshot, zones, ())
    head = {
        "hosts": len(unavailable.hosts),
        "disabled": len(unavailable.disabled),
        "down": len(unavailable.down),
        "included": include_unavailable,
    }
    if not resolved:
        return {"": {**builder.report(None, by), "unavailable": head}}
    reports = {}
    for flavor in resolved:
        report = builder.report(flavor, by)
        extra = 0
        if other is not None:
            counted, otherwise = report["fits"], other.fits(flavor)
            extra = max(0, counted - otherwise if include_unavailable else otherwise - counted)
        reports[flavor.name] = {**report, "unavailable": {**head, "fits": extra}}
    return reports
