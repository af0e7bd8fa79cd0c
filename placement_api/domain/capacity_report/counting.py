"""How many instances of a flavor fit: per host alone, and per set of hosts
placed one instance after the other (pure, no I/O). The rules, nested and
shared trees: docs/capacity.md, Counting nested and shared trees; the column
layout and the shortcut past placing: docs/capacity.md, Speed.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from placement_api.domain.candidates.names import ResolvedGroup
from placement_api.domain.capacity import InventoryLimits, unit_violation
from placement_api.domain.capacity_report.layout import MISSING, ClassLayout, Column, Layout
from placement_api.domain.capacity_report.placing import Placement
from placement_api.domain.capacity_report.snapshot import (
    CAPACITY,
    MAX_UNIT,
    MIN_UNIT,
    PROVIDER,
    STEP_SIZE,
    USED,
    Units,
)

COUNTING = (
    "Per class, a provider offers floor(free / amount) instance slots, free being "
    "(total - reserved) * allocation_ratio (floored) - used, and none when free is "
    "short or min_unit, max_unit or step_size forbid the amount. An instance takes "
    "each class from one provider of its host's tree (root or child, e.g. a NUMA cell) "
    "or from a sharing provider the tree reaches through an aggregate; a host fits the "
    "least, over the flavor's classes, of the slots it can reach. Totals and breakdowns "
    "place instances one after the other, hosts in name order, own providers first: a "
    "sharing provider's capacity is spent once, however many hosts reach it. A host's "
    "own fits counts it alone with all the shared capacity it reaches, so host figures "
    "may add up to more than a total when hosts share a provider. Required traits must "
    "be held between the tree's providers with room and the sharing providers with room "
    "it reaches; a provider with a forbidden trait, in a forbidden aggregate (its own or "
    "its root's), or outside member_of (its own and its root's aggregates) is not used."
)


def units_allow(units: Units, amount: int) -> bool:
    """``amount`` meets these (min_unit, max_unit, step_size): the capacity rule's test."""
    low, high, step = units
    return unit_violation(InventoryLimits(0, 0, low, high, step, 1.0), amount) is None


class FlavorCounter:
    """One flavor over one layout: per host fits alone, and per set of hosts."""

    def __init__(self, layout: Layout, group: ResolvedGroup | None) -> None:
        self._layout = layout
        hosts = len(layout.hosts)
        # Per host position: the instances it fits alone.
        self.alone: list[int] = [0] * hosts
        self._placement: Placement | None = None
        if group is not None:
            self._count(group)

    def _usable(self, group: ResolvedGroup) -> tuple[set[int], set[int] | None]:
        """Providers the flavor may not use, and (with member_of) those it may."""
        snapshot = self._layout.snapshot
        roots, in_aggregate = snapshot.roots, snapshot.aggregates_of
        banned = {p for p, traits in snapshot.traits_of.items() if traits & group.forbidden}
        if group.forbidden_aggregates:
            members = {p for p, found in in_aggregate.items() if found & group.forbidden_aggregates}
            banned |= {p for p, root in roots.items() if p in members or root in members}
        allowed: set[int] | None = None
        for any_of in group.member_of:
            members = {p for p, found in in_aggregate.items() if found & any_of}
            spanned = {p for p, root in roots.items() if p in members or root in members}
            allowed = spanned if allowed is None else allowed & spanned
        return banned, allowed

    def _count(self, group: ResolvedGroup) -> None:
        layout = self._layout
        banned, allowed = self._usable(group)
        amounts = sorted(group.amounts.items())
        hosts = len(layout.hosts)
        # Providers with room for some class, among those holding a required trait.
        required = frozenset().union(*group.required)
        holders = {p for p, traits in layout.snapshot.traits_of.items() if traits & required}
        with_room: set[int] | None = set() if group.required else None
        own: list[list[int]] = []
        pool: dict[int, list[int]] = {}
        for index, (class_id, amount) in enumerate(amounts):
            found = layout.classes.get(class_id)
            if found is None:
                own.append([0] * hosts)
                continue
            own.append(_own_slots(found, amount, banned, allowed, with_room, holders, hosts))
            for row in found.sharing:
                provider, free = row[PROVIDER], row[CAPACITY] - row[USED]
                units = (row[MIN_UNIT], row[MAX_UNIT], row[STEP_SIZE])
                if free < amount or provider in banned or not units_allow(units, amount):
                    continue
                if allowed is None or provider in allowed:
                    pool.setdefault(provider, [0] * len(amounts))[index] = free // amount
        # Per class: each signature's slots in all, of the sharing providers offering it.
        offered = [
            [sum(pool[s][i] for s in reached if s in pool) for reached in layout.signatures]
            for i in range(len(amounts))
        ]
        reach = [
            [per_signature[s] for s in layout.signature_of] if any(per_signature) else None
            for per_signature in offered
        ]
        reachable = [
            slots if extra is None else list(map(operator.add, slots, extra))
            for slots, extra in zip(own, reach, strict=True)
        ]
        alone = reachable[0] if len(reachable) == 1 else list(map(min, *reachable))
        if with_room is not None:
            qualified = self._qualified(group, with_room, pool)
            alone = [
                fits if root in qualified else 0
                for fits, root in zip(alone, layout.hosts, strict=True)
            ]
        self.alone = alone
        if pool:
            self._placement = Placement(layout, own, pool, alone)

    def _qualified(
        self, group: ResolvedGroup, with_room: set[int], pool: dict[int, list[int]]
    ) -> set[int]:
        """Roots whose providers with room, with the sharing providers with room
        they reach, hold the required traits between them."""
        layout = self._layout
        roots, traits_of = layout.snapshot.roots, layout.snapshot.traits_of
        found: set[int] | None = None
        for any_of in group.required:
            holders = {p for p, traits in traits_of.items() if traits & any_of}
            reached = {roots[p] for p in holders & with_room}
            for shared in holders & pool.keys():
                reached.update(layout.hosts[p] for p in layout.served(shared))
            found = reached if found is None else found & reached
        return found or set()

    def count(self, positions: Sequence[int], closed: bool = False) -> int:
        """Instances the hosts (positions, in name order) take when placed one
        after the other. ``closed``: every host reaching a sharing provider
        that one of them reaches is among them, so the cloud's pass placed
        them alike."""
        alone = self.alone
        placement = self._placement
        if placement is not None and not placement.unbound:
            placed = placement.cloud if closed else placement.place(positions)
            return sum(placed[p] for p in positions)
        if len(positions) == len(alone):
            return sum(alone)
        return sum([alone[p] for p in positions])


def _own_slots(
    layout: ClassLayout,
    amount: int,
    banned: set[int],
    allowed: set[int] | None,
    with_room: set[int] | None,
    holders: set[int],
    hosts: int,
) -> list[int]:
    """Per host position, the slots of ``amount`` its own providers offer."""
    allowing = [units_allow(units, amount) for units in layout.units]
    if not any(allowing):
        return [0] * hosts
    total: list[int] | None = None if layout.columns else [0] * hosts
    for column in layout.columns:
        free = _usable_free(column, allowing, banned, allowed)
        if with_room is not None:
            with_room.update(
                [
                    p
                    for p, f in zip(column.providers, free, strict=True)
                    if f >= amount and p in holders
                ]
            )
        slots = [f // amount if f >= amount else 0 for f in free]
        total = slots if total is None else list(map(operator.add, total, slots))
    assert total is not None
    for position, row in layout.spill:
        provider, free = row[PROVIDER], row[CAPACITY] - row[USED]
        units = layout.units[(row[MIN_UNIT], row[MAX_UNIT], row[STEP_SIZE])]
        if free < amount or not allowing[units] or provider in banned:
            continue
        if allowed is None or provider in allowed:
            total[position] += free // amount
            if with_room is not None:
                with_room.add(provider)
    return total


def _usable_free(
    column: Column, allowing: list[bool], banned: set[int], allowed: set[int] | None
) -> list[int]:
    """The column's free capacity, MISSING where the flavor may not use the row."""
    free = column.free
    if not all(allowing):
        assert column.units is not None  # several unit triples, some allowed
        free = [f if allowing[u] else MISSING for f, u in zip(free, column.units, strict=True)]
    if banned:
        free = [
            f if p not in banned else MISSING for f, p in zip(free, column.providers, strict=True)
        ]
    if allowed is not None:
        free = [f if p in allowed else MISSING for f, p in zip(free, column.providers, strict=True)]
    return free
