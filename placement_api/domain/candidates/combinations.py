"""What a search is given and what it finds (pure, no I/O).

A search takes one ``GroupPlan`` per request group (its slots and, per
anchor tree, the providers that may fill each) and the ``SearchRules`` to
check; it finds ``Candidate``s: a provider per slot, turned into
allocations and mappings by the ``Layout`` that ``Layouts`` works out once
per pattern of shared providers (which slots share a provider).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

Amounts = tuple[tuple[int, int], ...]
# One provider per slot, in slot order.
Combination = tuple[int, ...]
NO_TRAITS: frozenset[int] = frozenset()


@dataclass(frozen=True)
class GroupPlan:
    suffix: str
    granular: bool
    # Per slot, the (class id, amount) pairs its provider supplies.
    slots: tuple[Amounts, ...]
    # Anchor -> one list per slot of the providers that may fill it.
    options: Mapping[int, Sequence[Sequence[int]]]
    # Unsuffixed group: trait-id sets its providers must cover between them.
    required: tuple[frozenset[int], ...] = ()


@dataclass(frozen=True)
class SearchRules:
    isolate: bool = False
    same_subtrees: tuple[frozenset[str], ...] = ()
    nested_aware: bool = True
    # (provider, class) -> most a candidate may take; only for classes that
    # more than one group asks for (one group alone is checked in SQL).
    headroom: Mapping[tuple[int, int], int] = field(default_factory=dict)
    provider_traits: Mapping[int, frozenset[int]] = field(default_factory=dict)
    root_of: Mapping[int, int] = field(default_factory=dict)
    parent_of: Mapping[int, int | None] = field(default_factory=dict)
    # Sharing providers: the ones that serve more than their own tree.
    sharing: frozenset[int] = frozenset()


class Layout(NamedTuple):
    """How a combination becomes a candidate; shared by every combination
    with the same pattern of shared providers (which slots share one)."""

    # Per provider allocated: the first slot it fills, and its amounts
    # (class id -> amount) merged over its slots. Read only.
    held: tuple[tuple[int, dict[int, int]], ...]
    # Per group suffix: the slots of its distinct providers.
    mapped: tuple[tuple[str, tuple[int, ...]], ...]
    # Every slot's provider is allocated from (every group has resources).
    every_slot: bool


class Candidate(NamedTuple):
    """One way to meet the request: a provider per slot, and the layout that
    turns them into allocations and mappings. Searches find tens of
    thousands, so they are kept in this form and rendered once, at the end."""

    chosen: Combination
    layout: Layout

    @property
    def allocations(self) -> dict[int, dict[int, int]]:
        return {self.chosen[index]: amounts for index, amounts in self.layout.held}

    @property
    def mappings(self) -> dict[str, list[int]]:
        chosen = self.chosen
        return {suffix: [chosen[i] for i in slots] for suffix, slots in self.layout.mapped}

    def key(self) -> tuple[object, ...]:
        resources = sorted(
            (provider, class_id, amount)
            for provider, amounts in self.allocations.items()
            for class_id, amount in amounts.items()
        )
        mappings = sorted((suffix, tuple(sorted(ps))) for suffix, ps in self.mappings.items())
        return (tuple(resources), tuple(mappings))


_CHOSEN, _LAYOUT = itemgetter(0), itemgetter(1)
_new_tuple = tuple.__new__


def providers_of(candidates: Sequence[Candidate]) -> set[int]:
    """The providers the candidates allocate from. Per layout, not per
    candidate, which slots hold them: thousands of candidates share a few.
    When every layout allocates from every slot (no group without
    resources), they are every provider chosen, gathered without a loop."""
    layouts = dict(zip(map(id, map(_LAYOUT, candidates)), map(_LAYOUT, candidates), strict=True))
    if all(layout.every_slot for layout in layouts.values()):
        return set(chain.from_iterable(map(_CHOSEN, candidates)))
    used: set[int] = set()
    slots_of = {
        ident: tuple(index for index, _ in layout.held) for ident, layout in layouts.items()
    }
    for chosen, layout in candidates:
        slots = slots_of[id(layout)]
        if len(slots) == 1:
            used.add(chosen[slots[0]])
        else:
            used.update([chosen[index] for index in slots])
    return used


class Layouts:
    """The layout of each pattern of shared providers, worked out once each."""

    def __init__(self, slots: Sequence[tuple[str, Amounts]]) -> None:
        """``slots``: per slot, its group's suffix and its amounts."""
        self.amounts = [amounts for _, amounts in slots]
        spans: dict[str, list[int]] = {}
        for index, (suffix, _) in enumerate(slots):
            spans.setdefault(suffix, []).append(index)
        self.groups = list(spans.items())
        self.built: dict[Combination, Layout] = {}

    def candidate(self, chosen: Combination) -> Candidate:
        # Per slot, the first slot with the same provider. Compared by hand
        # for three slots (a flavor's VCPU, MEMORY_MB, DISK_GB), four times
        # faster than the index lookups, once per candidate found.
        if len(chosen) == 3:
            first, second, third = chosen
            pattern: Combination = (
                0,
                0 if second == first else 1,
                0 if third == first else 1 if third == second else 2,
            )
        else:
            pattern = tuple(map(chosen.index, chosen))
        layout = self.built.get(pattern)
        if layout is None:
            layout = self.built[pattern] = self._layout(pattern)
        # tuple.__new__ itself: the named tuple's own __new__ is a Python call.
        return _new_tuple(Candidate, (chosen, layout))

    def _layout(self, pattern: Combination) -> Layout:
        merged: dict[int, tuple[int, dict[int, int]]] = {}
        for index, (first, amounts) in enumerate(zip(pattern, self.amounts, strict=True)):
            if not amounts:
                continue
            if first not in merged:
                merged[first] = (index, {})
            held = merged[first][1]
            for class_id, amount in amounts:
                held[class_id] = held.get(class_id, 0) + amount
        mapped = tuple(
            (suffix, tuple(dict.fromkeys(pattern[i] for i in indexes)))
            for suffix, indexes in self.groups
        )
        return Layout(tuple(merged.values()), mapped, all(self.amounts))
