"""The capacity report's column counting against a straightforward reference.

Random small clouds (nested trees, trees wider than the layout's columns,
sharing providers small enough to run out or not, unit limits, over-capacity
rows, traits, member_of) are built as snapshots; every figure of the report
is compared with one worked out provider by provider and host by host, as
docs/capacity.md describes it. The shortcut that skips the placement pass
when no sharing provider can run short must never change a count.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from placement_api.domain.candidates.names import ResolvedGroup
from placement_api.domain.capacity_report.flavor import ResolvedFlavor
from placement_api.domain.capacity_report.report import BREAKDOWNS, ReportBuilder
from placement_api.domain.capacity_report.snapshot import Snapshot
from placement_api.domain.capacity_report.zones import AggregateInfo, ZoneMap

CLASSES = {1: "VCPU", 2: "MEMORY_MB", 3: "DISK_GB"}
TRAITS = (50, 51)
Row = tuple[int, int, int, int, int, int, int, float, int, int]


@dataclass
class Cloud:
    roots: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    sharing: set[int] = field(default_factory=set)
    rows: list[Row] = field(default_factory=list)
    aggregates_of: dict[int, frozenset[int]] = field(default_factory=dict)
    traits_of: dict[int, frozenset[int]] = field(default_factory=dict)

    def snapshot(self) -> Snapshot:
        shown = {p for p, root in self.roots.items() if p == root} | self.sharing
        return Snapshot(
            roots=dict(self.roots),
            named={p: (f"uuid-{p}", self.names[p]) for p in shown},
            rows=list(self.rows),
            class_names=dict(CLASSES),
            aggregates_of=dict(self.aggregates_of),
            aggregate_uuids={a: f"agg-{a}" for a in range(1, 5)},
            traits_of=dict(self.traits_of),
            sharing=frozenset(self.sharing),
        )


def _cloud(rng: random.Random) -> Cloud:
    cloud = Cloud()
    ids = iter(rng.sample(range(1, 10_000), 200))
    # Sometimes a class few hosts have (as devices): too sparse for a column.
    rare = rng.choice([None, 3])

    def provider(root: int | None) -> int:
        ident = next(ids)
        cloud.roots[ident] = ident if root is None else root
        cloud.names[ident] = f"p{rng.randrange(10_000):05}-{ident}"
        if rng.random() < 0.4:
            cloud.aggregates_of[ident] = frozenset(rng.sample(range(1, 5), rng.randint(1, 2)))
        held = frozenset(t for t in TRAITS if rng.random() < 0.3)
        if held:
            cloud.traits_of[ident] = held
        for class_id in CLASSES:
            if rng.random() < (0.04 if class_id == rare else 0.6):
                cloud.rows.append(_row(rng, ident, class_id, shared=False))
        return ident

    for _ in range(rng.randint(0, 14)):
        root = provider(None)
        for _ in range(rng.choice([0, 0, 1, 2, 6])):
            provider(root)
    for _ in range(rng.randint(0, 3)):
        shared = next(ids)
        cloud.roots[shared] = shared
        cloud.names[shared] = f"s{rng.randrange(100)}-{shared}"
        cloud.sharing.add(shared)
        cloud.aggregates_of[shared] = frozenset(rng.sample(range(1, 5), rng.randint(1, 2)))
        held = frozenset(t for t in TRAITS if rng.random() < 0.3)
        if held:
            cloud.traits_of[shared] = held
        for class_id in CLASSES:
            if rng.random() < 0.5:
                cloud.rows.append(_row(rng, shared, class_id, shared=True))
    rng.shuffle(cloud.rows)
    return cloud


def _row(rng: random.Random, provider: int, class_id: int, shared: bool) -> Row:
    total = rng.randint(0, 200 if shared else 24)
    reserved = rng.randint(0, 3)
    ratio = rng.choice([1.0, 1.5, 2.0])
    capacity = int((total - reserved) * ratio)
    used = rng.randint(0, max(0, capacity + 6))  # sometimes over capacity
    low, step = rng.choice([(1, 1), (1, 1), (2, 1), (1, 2)])
    high = rng.choice([total or 1, 3, 1000])
    return (provider, class_id, total, reserved, low, high, step, ratio, capacity, used)


def _flavor(rng: random.Random) -> ResolvedGroup:
    classes = rng.sample(sorted(CLASSES), rng.randint(1, 3))
    required: tuple[frozenset[int], ...] = ()
    forbidden: frozenset[int] = frozenset()
    if rng.random() < 0.3:
        required = (frozenset(rng.sample(TRAITS, rng.randint(1, 2))),)
    elif rng.random() < 0.3:
        forbidden = frozenset({rng.choice(TRAITS)})
    member_of = (frozenset(rng.sample(range(1, 5), 2)),) if rng.random() < 0.25 else ()
    banned = frozenset({rng.randint(1, 4)}) if rng.random() < 0.15 else frozenset()
    return ResolvedGroup(
        suffix="",
        granular=False,
        amounts={c: rng.randint(1, 6) for c in classes},
        required=required,
        forbidden=forbidden,
        member_of=member_of,
        forbidden_aggregates=banned,
        tree_root=None,
    )


class Reference:
    """The documented arithmetic, provider by provider and host by host."""

    def __init__(self, cloud: Cloud, group: ResolvedGroup) -> None:
        self.cloud, self.group = cloud, group
        trees = {r for p, r in cloud.roots.items() if p not in cloud.sharing}
        self.hosts = sorted(trees, key=lambda r: cloud.names[r])
        self.tree = {h: [p for p, r in cloud.roots.items() if r == h and p not in cloud.sharing]
                     for h in self.hosts}  # fmt: skip
        self.reach = {h: self._reach(h) for h in self.hosts}

    def _aggregates(self, provider: int) -> frozenset[int]:
        return self.cloud.aggregates_of.get(provider, frozenset())

    def _reach(self, host: int) -> list[int]:
        touched = frozenset().union(*(self._aggregates(p) for p in self.tree[host]))
        return sorted(s for s in self.cloud.sharing if self._aggregates(s) & touched)

    def _usable(self, provider: int) -> bool:
        group, cloud = self.group, self.cloud
        spanned = self._aggregates(provider) | self._aggregates(cloud.roots[provider])
        if cloud.traits_of.get(provider, frozenset()) & group.forbidden:
            return False
        if spanned & group.forbidden_aggregates:
            return False
        return all(spanned & any_of for any_of in group.member_of)

    def slots(self, provider: int, class_id: int) -> int:
        amount = self.group.amounts[class_id]
        for p, c, _, _, low, high, step, _, capacity, used in self.cloud.rows:
            if (p, c) == (provider, class_id):
                free = capacity - used
                fits = free >= amount and low <= amount <= high and amount % step == 0
                return free // amount if fits and self._usable(p) else 0
        return 0

    def own(self, host: int, class_id: int) -> int:
        return sum(self.slots(p, class_id) for p in self.tree[host])

    def _qualified(self, host: int) -> bool:
        def with_room(p: int) -> bool:
            return any(self.slots(p, c) for c in self.group.amounts)

        for any_of in self.group.required:
            holding = [p for p in self.tree[host] + self.reach[host]
                       if self.cloud.traits_of.get(p, frozenset()) & any_of]  # fmt: skip
            if not any(with_room(p) for p in holding):
                return False
        return True

    def place(self, hosts: list[int]) -> dict[int, int]:
        """Hosts placed one after the other, spending the sharing providers' slots."""
        left = {(s, c): self.slots(s, c) for s in self.cloud.sharing for c in self.group.amounts}
        placed = {}
        for host in hosts:
            if not self._qualified(host):
                placed[host] = 0
                continue
            fits = min(
                self.own(host, c) + sum(left[s, c] for s in self.reach[host])
                for c in self.group.amounts
            )
            for c in self.group.amounts:
                need = fits - self.own(host, c)
                for s in self.reach[host]:
                    taken = max(0, min(need, left[s, c]))
                    left[s, c] -= taken
                    need -= taken
            placed[host] = fits
        return placed


def _sums(rows: list[Row]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for _, c, total, reserved, _, _, _, ratio, capacity, used in rows:
        sums = found.setdefault(CLASSES[c], dict.fromkeys(("t", "r", "c", "u", "w", "o"), 0))
        sums["t"] += total
        sums["r"] += reserved
        sums["c"] += capacity
        sums["u"] += used
        sums["w"] += (total - reserved) * ratio
        sums["o"] += max(0, used - (total - reserved))
        sums["fallback"] = max(sums.get("fallback", 0.0), ratio)
    return found


def _host_view(rows: list[Row]) -> dict[str, Any]:
    return {
        name: {
            "total": s["t"],
            "reserved": s["r"],
            "allocation_ratio": s["w"] / (s["t"] - s["r"]) if s["t"] > s["r"] else s["fallback"],
            "capacity": s["c"],
            "used": s["u"],
            "free": s["c"] - s["u"],
        }
        for name, s in sorted(_sums(rows).items())
    }


def _summary(rows: list[Row]) -> dict[str, Any]:
    return {
        name: {
            "total": s["t"],
            "reserved": s["r"],
            "capacity": s["c"],
            "used": s["u"],
            "free": s["c"] - s["u"],
            "overcommitted_share": round(s["o"] / s["u"], 6) if s["u"] > 0 else 0.0,
        }
        for name, s in sorted(_sums(rows).items())
    }


ZONES = ZoneMap({"agg-1": AggregateInfo("one", "az1"), "agg-2": AggregateInfo(None, "az2")})


@pytest.mark.parametrize("seed", range(80))
def test_reports_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    cloud = _cloud(rng)
    builder = ReportBuilder(cloud.snapshot(), ZONES, BREAKDOWNS)
    for _ in range(4):
        group = _flavor(rng)
        report = builder.report(ResolvedFlavor("f", group))
        reference = Reference(cloud, group)
        hosts = reference.hosts
        alone = {h: reference.place([h])[h] for h in hosts}
        assert [(h["name"], h["fits"]) for h in report["hosts"]] == [
            (cloud.names[h], alone[h]) for h in hosts
        ]
        assert report["fits"] == sum(reference.place(hosts).values())
        in_aggregate = {a: [h for h in hosts if a in cloud.aggregates_of.get(h, ())]
                        for a in range(1, 5)}  # fmt: skip
        for aggregate in report["aggregates"]:
            members = in_aggregate[int(aggregate["uuid"].split("-")[1])]
            assert aggregate["hosts"] == len(members)
            assert aggregate["fits"] == sum(reference.place(members).values())
            rows = [
                r for r in cloud.rows if cloud.roots[r[0]] in members and r[0] not in cloud.sharing
            ]
            assert aggregate["resources"] == _summary(rows)
        for zone in report["availability_zones"]:
            members = [h for h in hosts if zone["name"] in _zones(cloud, h)]
            assert zone["fits"] == sum(reference.place(members).values())
    host_rows = [r for r in cloud.rows if r[0] not in cloud.sharing]
    assert report["resource_classes"] == _summary(cloud.rows)
    for host, shown in zip(Reference(cloud, group).hosts, report["hosts"], strict=True):
        assert shown["resources"] == _host_view([r for r in host_rows if cloud.roots[r[0]] == host])
    for shown in report["sharing_providers"]:
        provider = int(shown["uuid"].split("-")[1])
        assert shown["resources"] == _host_view([r for r in cloud.rows if r[0] == provider])


def _zones(cloud: Cloud, host: int) -> list[str]:
    return ZONES.zones_of(sorted(f"agg-{a}" for a in cloud.aggregates_of.get(host, ())))


def test_the_clouds_exercise_both_the_pass_and_its_shortcut() -> None:
    """Some clouds' sharing providers run short (the placement pass decides),
    some have them without running short (the shortcut decides)."""
    short = ample = 0
    for seed in range(60):
        rng = random.Random(seed)
        cloud = _cloud(rng)
        for _ in range(4):
            reference = Reference(cloud, _flavor(rng))
            if not any(reference.reach[h] for h in reference.hosts):
                continue
            placed = reference.place(reference.hosts)
            alone = {h: reference.place([h])[h] for h in reference.hosts}
            short += placed != alone
            ample += placed == alone and any(alone.values())
    assert short >= 5
    assert ample >= 5
