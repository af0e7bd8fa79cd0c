"""Arrange each group's providers by the tree they can serve (pure, no I/O).

A candidate is "anchored" at the root of one tree. A provider serves the
tree it belongs to; a sharing provider (trait ``MISC_SHARES_VIA_AGGREGATE``)
also serves every tree with a member in one of its aggregates. For each
group the result maps an anchor to one list of providers per *slot*: a
granular group has one slot (one provider takes all its resources); the
unsuffixed group has one slot per resource class, ordered by class id.
Each list is in provider order.

Rows come from SQL ordered by provider within a tree, so only the lists a
sharing provider joins can need sorting. ``within``, when given, limits the
trees sharing providers are spread over (their rows serve every window).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

Options = dict[int, list[list[int]]]


class Trees(Protocol):
    """Root ids, by membership (a set, or a window of ids)."""

    def __contains__(self, tree: int, /) -> bool: ...


@dataclass(frozen=True)
class SharingMap:
    """Sharing providers, the trees each can serve, and its aggregates."""

    providers: frozenset[int] = frozenset()
    anchors: Mapping[int, frozenset[int]] = field(default_factory=dict)
    aggregates: Mapping[int, frozenset[int]] = field(default_factory=dict)

    def member_of(self, provider: int, member_of: Sequence[frozenset[int]]) -> bool:
        """The provider itself is in one aggregate of every ``member_of`` set."""
        mine = self.aggregates.get(provider, frozenset())
        return all(mine & any_of for any_of in member_of)


@dataclass(frozen=True)
class TreeRule:
    """Tree-level conditions, checked here for the trees sharing providers serve
    (SQL checks them for everything else)."""

    root_required: frozenset[int] = frozenset()
    root_forbidden: frozenset[int] = frozenset()
    # Root -> which of the root_required/root_forbidden traits it has.
    root_traits: Mapping[int, frozenset[int]] = field(default_factory=dict)
    # Roots in the group's forbidden aggregates.
    banned: frozenset[int] = frozenset()

    def allows(self, root: int) -> bool:
        traits = self.root_traits.get(root, frozenset())
        return (
            self.root_required <= traits
            and not self.root_forbidden & traits
            and root not in self.banned
        )

    @property
    def allows_all(self) -> bool:
        return not (self.root_required or self.root_forbidden or self.banned)


@dataclass(frozen=True)
class _Both:
    """Trees in both."""

    first: Trees
    second: Trees

    def __contains__(self, tree: int, /) -> bool:
        return tree in self.first and tree in self.second


def _shared_trees(
    provider: int,
    root: int,
    sharing: SharingMap,
    rule: TreeRule,
    expand: bool,
    within: Trees | None,
) -> Iterable[int]:
    """The trees a sharing provider serves: its own, and with ``expand`` those
    of its aggregates."""
    trees = (sharing.anchors.get(provider, frozenset()) | {root}) if expand else {root}
    if within is not None:
        trees = {tree for tree in trees if tree in within}
    return trees if rule.allows_all else [tree for tree in trees if rule.allows(tree)]


def _join(joined: Iterable[tuple[int, list[int]]]) -> None:
    """Append each sharing provider to its list, in provider order, and sort
    the lists that leaves out of order."""
    unsorted: list[list[int]] = []
    for provider, providers in joined:
        if providers and providers[-1] > provider:
            unsorted.append(providers)
        providers.append(provider)
    for providers in unsorted:
        providers.sort()


def granular_options(
    rows: Iterable[tuple[int, int]],
    sharing: SharingMap,
    rule: TreeRule,
    *,
    within: Trees | None = None,
) -> Options:
    """Rows are (provider, root) of providers meeting the whole group."""
    options: Options = {}
    shared_rows: list[tuple[int, int]] = []
    shared = sharing.providers
    for provider, root in rows:
        if provider in shared:
            shared_rows.append((provider, root))
            continue
        slots = options.get(root)
        if slots is None:
            options[root] = [[provider]]
        else:
            slots[0].append(provider)
    if shared_rows:
        joined: list[tuple[int, list[int]]] = []
        for provider, root in sorted(shared_rows):
            for anchor in _shared_trees(provider, root, sharing, rule, True, within):
                slots = options.get(anchor)
                if slots is None:
                    slots = options[anchor] = [[]]
                joined.append((provider, slots[0]))
        _join(joined)
    return options


def unsuffixed_options(
    rows: Iterable[tuple[int, int, int]],
    class_ids: Sequence[int],
    sharing: SharingMap,
    rule: TreeRule,
    *,
    member_of: Sequence[frozenset[int]] = (),
    in_tree: bool = False,
    within: Trees | None = None,
) -> Options:
    """Rows are (provider, root, class). Only trees with a provider for every
    class are kept. A sharing provider serves other trees only when the group
    is not limited to one tree and the provider itself is in ``member_of``."""
    position = {class_id: index for index, class_id in enumerate(class_ids)}
    width = len(class_ids)
    by_anchor: Options = {}
    shared_rows: list[tuple[int, int, int]] = []
    shared = sharing.providers
    # Rows come grouped by tree: look a tree's lists up once per run of rows.
    current_root: int | None = None
    current: list[list[int]] = []
    for provider, root, class_id in rows:
        if provider in shared:
            shared_rows.append((provider, root, class_id))
            continue
        if root != current_root:
            found = by_anchor.get(root)
            if found is None:
                found = by_anchor[root] = [[] for _ in range(width)]
            current_root, current = root, found
        current[position[class_id]].append(provider)
    if shared_rows:
        # A tree none of whose own providers is listed is kept only if
        # sharing providers supply every class: otherwise serving it is moot.
        if len({class_id for _, _, class_id in shared_rows}) < width:
            known = by_anchor.keys()
            within = known if within is None else _Both(known, within)
        joined: list[tuple[int, list[int]]] = []
        for provider, root, class_id in sorted(shared_rows):
            expand = not in_tree and sharing.member_of(provider, member_of)
            for anchor in _shared_trees(provider, root, sharing, rule, expand, within):
                slots = by_anchor.get(anchor)
                if slots is None:
                    slots = by_anchor[anchor] = [[] for _ in range(width)]
                joined.append((provider, slots[position[class_id]]))
        _join(joined)
    return {anchor: slots for anchor, slots in by_anchor.items() if all(slots)}
