"""How many instances of a flavor fit: per host alone, and per set of hosts
placed one instance after the other (pure, no I/O).

An instance takes, for each class of the flavor, its whole amount from one
provider: a provider of the host's tree (root or descendant, e.g. a NUMA
cell) or a sharing provider the tree reaches through an aggregate. Classes
may come from different providers, as in the unsuffixed group of a
candidates request. A provider offers ``floor(free / amount)`` instance
slots of a class (0 when free is negative, or when min_unit, max_unit or
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

from collections.abc import Iterable
from dataclasses import dataclass

from placement_api.domain.candidates.names import ResolvedGroup
from placement_api.domain.capacity import unit_violation
from placement_api.domain.capacity_report.snapshot import Snapshot, Stock

COUNTING = (
    "Per class, a provider offers floor(free / amount) instance slots, free being "
    "(total - reserved) * allocation_ratio (floored) - used, and none when free is "
    "negative or min_unit, max_unit or step_size forbid the amount. An instance takes "
    "each class from one provider of its host's tree (root or child, e.g. a NUMA cell) "
    "or from a sharing provider the tree reaches through an aggregate; a host fits the "
    "least, over the flavor's classes, of the slots it can reach. Totals and breakdowns "
    "place instances one after the other, hosts in name order, own providers first: a "
    "sharing provider's capacity is spent once, however many hosts reach it. A host's "
    "own fits counts it alone with all the shared capacity it reaches, so host figures "
    "may add up to more than a total when hosts share a provider. Required traits must "
    "be held between the tree's usable providers and those sharing providers; a "
    "provider with a forbidden trait, in a forbidden aggregate, or outside member_of "
    "(its own or its root's aggregates) is not used."
)


def slots(stock: Stock, amount: int) -> int:
    """Instances of ``amount`` this inventory row still takes."""
    free = stock.free
    if free < amount or unit_violation(stock.limits, amount) is not None:
        return 0
    return free // amount


@dataclass(frozen=True, slots=True)
class HostDemand:
    """What one host can offer a flavor: own slots and reachable sharing providers, per class."""

    own: tuple[int, ...]
    shared: tuple[tuple[int, ...], ...]


class FlavorCounter:
    """One flavor over one snapshot: per host fits alone, and per set of hosts."""

    def __init__(self, snapshot: Snapshot, group: ResolvedGroup | None) -> None:
        self._snapshot = snapshot
        self._group = group
        self._amounts = sorted(group.amounts.items()) if group else []
        self._shared_slots: dict[int, tuple[int, ...]] = {}
        self.hosts: dict[int, HostDemand | None] = {}
        if group is not None:
            self._shared_slots = {
                s: self._slots_of(s) for s in snapshot.sharing if self._usable(s, s)
            }
            for root in snapshot.trees:
                self.hosts[root] = self._demand(root)

    def _usable(self, provider: int, root: int) -> bool:
        group = self._group
        assert group is not None
        snapshot = self._snapshot
        if group.forbidden & snapshot.traits_of.get(provider, frozenset()):
            return False
        own = snapshot.aggregates_of.get(provider, frozenset())
        root_aggregates = snapshot.aggregates_of.get(root, frozenset())
        if group.forbidden_aggregates & (own | root_aggregates):
            return False
        return all(any_of & own or any_of & root_aggregates for any_of in group.member_of)

    def _slots_of(self, provider: int) -> tuple[int, ...]:
        stocks = self._snapshot.providers[provider].stocks
        return tuple(
            slots(stock, amount) if (stock := stocks.get(cls)) is not None else 0
            for cls, amount in self._amounts
        )

    def _demand(self, root: int) -> HostDemand | None:
        """None when the host cannot take the flavor at all (traits)."""
        snapshot = self._snapshot
        usable = [p for p in snapshot.trees[root] if self._usable(p, root)]
        per_provider = [self._slots_of(p) for p in usable]
        own = tuple(sum(column) for column in zip(*per_provider, strict=True)) or (0,) * len(
            self._amounts
        )
        reached = [s for s in snapshot.shared_with.get(root, ()) if s in self._shared_slots]
        shared = tuple(
            tuple(s for s in reached if self._shared_slots[s][index] > 0)
            for index in range(len(self._amounts))
        )
        holders = [p for p, found in zip(usable, per_provider, strict=True) if any(found)]
        holders += [s for s in reached if any(self._shared_slots[s])]
        if not self._has_required(holders):
            return None
        return HostDemand(own, shared)

    def _has_required(self, providers: Iterable[int]) -> bool:
        assert self._group is not None
        if not self._group.required:
            return True
        traits_of = self._snapshot.traits_of
        held = frozenset().union(*(traits_of.get(p, frozenset()) for p in providers))
        return all(any_of & held for any_of in self._group.required)

    def alone(self, root: int) -> int:
        """Instances the host takes when no other host competes for shared capacity."""
        demand = self.hosts.get(root)
        if demand is None:
            return 0
        if not any(demand.shared):
            return min(demand.own)
        return self.count([root])

    def count(self, roots: Iterable[int]) -> int:
        """Instances the hosts take when placed one after the other, in the given order."""
        remaining: dict[int, list[int]] = {}
        total = 0
        for root in roots:
            demand = self.hosts.get(root)
            if demand is None:
                continue
            if not any(demand.shared):
                total += min(demand.own)
                continue
            left = [
                [remaining.setdefault(s, list(self._shared_slots[s])) for s in providers]
                for providers in demand.shared
            ]
            fits = min(
                own + sum(row[index] for row in rows)
                for index, (own, rows) in enumerate(zip(demand.own, left, strict=True))
            )
            for index, (own, rows) in enumerate(zip(demand.own, left, strict=True)):
                need = fits - own
                for row in rows:
                    if need <= 0:
                        break
                    taken = min(need, row[index])
                    row[index] -= taken
                    need -= taken
            total += fits
        return total
