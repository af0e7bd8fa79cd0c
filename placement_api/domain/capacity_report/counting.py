"""How many instances of a flavor fit: per host alone, and per set of hosts
placed one instance after the other (pure, no I/O).

An instance takes, for each class of the flavor, its whole amount from one
provider: a provider of the host's tree (root or descendant, e.g. a NUMA
cell) or a sharing provider the tree reaches through an aggregate. Classes
may come from different providers, as in the unsuffixed group of a
candidates request. A provider offers ``floor(free / amount)`` instance
slots of a class (none when free is short, or when min_unit, max_unit or
step_size forbid the amount), so a tree's own slots of a class are the sum
over its providers.

A set of hosts (the cloud, an aggregate, a zone) is counted the way
sequential placement would fill it: hosts in name order, each taking as
many instances as fit, using its own providers first and then what is left
of the sharing providers it reaches. A sharing provider's slots are thus
spent once, however many hosts reach it. A host's own figure is counted
alone, with all the shared capacity it reaches.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence

from placement_api.domain.candidates.names import ResolvedGroup
from placement_api.domain.capacity import InventoryLimits, unit_violation
from placement_api.domain.capacity_report.snapshot import (
    Snapshot,
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


# A host's own slots are not the limit when all its classes are shared.
_UNBOUNDED = sys.maxsize
# A host reaching sharing providers: the least of its own slots over the
# classes no sharing provider offers, and per class that one does, its own
# slots, the class's index and the sharing providers offering it.
_Plan = tuple[int, tuple[tuple[int, int, tuple[int, ...]], ...]]


def units_allow(units: Units, amount: int) -> bool:
    """``amount`` meets these (min_unit, max_unit, step_size): the capacity rule's test."""
    low, high, step = units
    return unit_violation(InventoryLimits(0, 0, low, high, step, 1.0), amount) is None


class FlavorCounter:
    """One flavor over one snapshot: per host fits alone, and per set of hosts."""

    def __init__(self, snapshot: Snapshot, group: ResolvedGroup | None) -> None:
        self._snapshot = snapshot
        # Per class of the flavor: root -> the tree's own slots.
        self._own: list[dict[int, int]] = []
        # Sharing provider -> its slots per class of the flavor.
        self._pool: dict[int, list[int]] = {}
        self._plans: dict[int, _Plan] = {}
        self.alone: dict[int, int] = {}
        # The cloud placed in name order: each host's share.
        self._placed: dict[int, int] = {}
        if group is not None:
            self._count(group)

    def _usable(self, group: ResolvedGroup) -> tuple[set[int], set[int] | None]:
        """Providers the flavor may not use, and (with member_of) those it may."""
        snapshot = self._snapshot
        providers = snapshot.providers
        banned = {p for p, traits in snapshot.traits_of.items() if traits & group.forbidden}
        in_aggregate = snapshot.aggregates_of
        if group.forbidden_aggregates:
            banned |= {
                p.id
                for p in providers.values()
                if group.forbidden_aggregates
                & (in_aggregate.get(p.id, frozenset()) | in_aggregate.get(p.root, frozenset()))
            }
        allowed: set[int] | None = None
        for any_of in group.member_of:
            members = {p for p, aggregates in in_aggregate.items() if aggregates & any_of}
            spanned = {p.id for p in providers.values() if p.id in members or p.root in members}
            allowed = spanned if allowed is None else allowed & spanned
        return banned, allowed

    def _count(self, group: ResolvedGroup) -> None:
        snapshot = self._snapshot
        banned, allowed = self._usable(group)
        amounts = sorted(group.amounts.items())
        with_room: set[int] = set()
        for index, (class_id, amount) in enumerate(amounts):
            own: defaultdict[int, int] = defaultdict(int)
            for units, rows in snapshot.host_rows.get(class_id, {}).items():
                if not units_allow(units, amount):
                    continue
                if banned or allowed is not None or group.required:
                    for root, provider, free in rows:
                        usable = allowed is None or provider in allowed
                        if free >= amount and usable and provider not in banned:
                            own[root] += free // amount
                            with_room.add(provider)
                else:
                    for root, _, free in rows:
                        if free >= amount:
                            own[root] += free // amount
            self._own.append(own)
            for provider, units, free in snapshot.sharing_rows.get(class_id, ()):
                if free < amount or provider in banned or not units_allow(units, amount):
                    continue
                if allowed is None or provider in allowed:
                    self._pool.setdefault(provider, [0] * len(amounts))[index] = free // amount
        qualified = self._qualified(group, with_room) if group.required else None
        self._plan(len(amounts), qualified)
        self._placed = self._place(snapshot.hosts) if self._plans else self.alone

    def _qualified(self, group: ResolvedGroup, with_room: set[int]) -> set[int]:
        """Roots whose providers with room, with the sharing providers with room
        they reach, hold the required traits between them."""
        snapshot = self._snapshot
        providers, traits_of = snapshot.providers, snapshot.traits_of
        found: set[int] | None = None
        for any_of in group.required:
            holders = {p for p, traits in traits_of.items() if traits & any_of}
            roots = {providers[p].root for p in holders & with_room}
            for shared in holders & self._pool.keys():
                roots |= snapshot.serves.get(shared, set())
            found = roots if found is None else found & roots
        return found or set()

    def _plan(self, classes: int, qualified: set[int] | None) -> None:
        """Each host's fits alone, and the plan of those reaching sharing providers."""
        own, pool = self._own, self._pool
        # Hosts reaching the same sharing providers share a plan's skeleton:
        # per class the providers offering it and their slots in all.
        signatures: dict[
            tuple[int, ...], tuple[tuple[int, ...], tuple[tuple[int, int, tuple[int, ...]], ...]]
        ] = {}
        for root, reached in self._snapshot.shared_with.items():
            skeleton = signatures.get(reached)
            if skeleton is None:
                offered = [
                    tuple(s for s in reached if s in pool and pool[s][i]) for i in range(classes)
                ]
                skeleton = signatures[reached] = (
                    tuple(i for i in range(classes) if not offered[i]),
                    tuple((i, sum(pool[s][i] for s in p), p) for i, p in enumerate(offered) if p),
                )
            unshared, shared = skeleton
            if not shared or (qualified is not None and root not in qualified):
                continue
            mine = [per_class.get(root, 0) for per_class in own]
            floor = min([mine[i] for i in unshared], default=_UNBOUNDED)
            self._plans[root] = (floor, tuple((mine[i], i, p) for i, _, p in shared))
            fits = min(floor, *(mine[i] + total for i, total, _ in shared))
            if fits:
                self.alone[root] = fits
        # Hosts reaching no sharing provider: the least of their own slots,
        # one class at a time (a host missing a class fits nothing).
        smallest: dict[int, int] = min(own, key=len)
        fitting = dict(smallest)
        for per_class in own:
            fitting = {r: min(n, per_class[r]) for r, n in fitting.items() if r in per_class}
        for root, fits in fitting.items():
            if root in self._plans or (qualified is not None and root not in qualified):
                continue
            if fits:
                self.alone[root] = fits

    def count(self, roots: Sequence[int], closed: bool = False) -> int:
        """Instances the hosts (in name order) take when placed one after the
        other. ``closed``: every host reaching a sharing provider that one of
        them reaches is among them, so the cloud's pass placed them alike."""
        if closed or not any(root in self._plans for root in roots):
            return sum(self._placed.get(root, 0) for root in roots)
        return sum(self._place(roots).values())

    def _place(self, roots: Sequence[int]) -> dict[int, int]:
        """Each host's instances when placed one after the other, in this order."""
        remaining: dict[int, list[int]] = {}
        placed: dict[int, int] = {}
        for root in roots:
            plan = self._plans.get(root)
            if plan is None:
                if root in self.alone:
                    placed[root] = self.alone[root]
                continue
            fits, items = plan
            for mine, index, providers in items:
                offered = mine
                for shared in providers:
                    left = remaining.get(shared)
                    if left is None:
                        left = remaining[shared] = list(self._pool[shared])
                    offered += left[index]
                fits = min(fits, offered)
            for mine, index, providers in items:
                need = fits - mine
                for shared in providers:
                    if need <= 0:
                        break
                    left = remaining[shared]
                    taken = min(need, left[index])
                    left[index] -= taken
                    need -= taken
            placed[root] = fits
        return placed
