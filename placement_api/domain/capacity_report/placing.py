"""Hosts placed one after the other, spending the sharing providers' slots (pure).

Each host, in name order, takes as many instances as fit, its own
providers first and then what is left of the sharing providers it reaches
(in id order). A host never takes more than it fits alone, and takes from
the sharing providers at most, per class, what it fits alone beyond its
own slots. So when, for every sharing provider and class, the hosts
reaching it would need no more than it offers, none is ever short and
every host places what it fits alone, in any set of hosts: the pass is
then not run (``unbound``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from placement_api.domain.capacity_report.layout import Layout

# Per signature, for each class one of its sharing providers offers: the
# class's index and those providers (None: they offer none of the flavor).
_Plan = tuple[tuple[int, tuple[int, ...]], ...] | None


class Placement:
    def __init__(
        self, layout: Layout, own: list[list[int]], pool: dict[int, list[int]], alone: list[int]
    ) -> None:
        """``own``: per class, each host's own slots; ``pool``: per sharing
        provider, its slots per class; ``alone``: each host's fits alone."""
        self._layout, self._own, self._pool, self._alone = layout, own, pool, alone
        self._plans: list[_Plan] = []
        for reached in layout.signatures:
            offering = [
                (i, providers)
                for i in range(len(own))
                if (providers := tuple(s for s in reached if s in pool and pool[s][i]))
            ]
            self._plans.append(tuple(offering) if offering else None)
        self.unbound = self._unbound()

    def _unbound(self) -> bool:
        """No sharing provider runs short even if every host reaching it took
        what it takes when counted alone."""
        own, alone, layout = self._own, self._alone, self._layout
        demand: dict[tuple[int, int], int] = {}
        for signature, plan in enumerate(self._plans):
            if plan is None:
                continue
            hosts = layout.signature_hosts[signature]
            for i, providers in plan:
                mine = own[i]
                needed = sum([a - mine[h] for h in hosts if (a := alone[h]) > mine[h]])
                for shared in providers:
                    demand[shared, i] = demand.get((shared, i), 0) + needed
        return all(needed <= self._pool[s][i] for (s, i), needed in demand.items())

    @cached_property
    def cloud(self) -> dict[int, int]:
        """Per host position, what it places when the whole cloud is placed."""
        return self.place(range(len(self._alone)))

    def place(self, positions: Sequence[int]) -> dict[int, int]:
        """Per host position, its instances when these hosts are placed in this order."""
        own, alone, pool = self._own, self._alone, self._pool
        plans, signature_of = self._plans, self._layout.signature_of
        remaining: dict[int, list[int]] = {}
        placed: dict[int, int] = {}
        for host in positions:
            fits = alone[host]
            plan = plans[signature_of[host]]
            if not fits or plan is None:
                placed[host] = fits
                continue
            # What it fits alone bounds it; only the shared classes can lower it.
            for i, providers in plan:
                offered = own[i][host]
                for shared in providers:
                    left = remaining.get(shared)
                    if left is None:
                        left = remaining[shared] = list(pool[shared])
                    offered += left[i]
                fits = min(fits, offered)
            for i, providers in plan:
                need = fits - own[i][host]
                for shared in providers:
                    if need <= 0:
                        break
                    left = remaining[shared]
                    taken = min(need, left[i])
                    left[i] -= taken
                    need -= taken
            placed[host] = fits
        return placed
