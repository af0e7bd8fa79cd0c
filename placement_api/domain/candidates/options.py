"""Arrange each group's providers by the tree they can serve (pure, no I/O).

A candidate is "anchored" at the root of one tree. A provider serves the
tree it belongs to; a sharing provider (trait ``MISC_SHARES_VIA_AGGREGATE``)
also serves every tree with a member in one of its aggregates. For each
group the result maps an anchor to one list of providers per *slot*: a
granular group has one slot (one provider takes all its resources); the
unsuffixed group has one slot per resource class, ordered by class id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Options = dict[int, list[list[int]]]


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


def _served_trees(
    provider: int, root: int, sharing: SharingMap, rule: TreeRule, expand: bool
) -> Iterable[int]:
    if provider not in sharing.providers:
        return (root,)
    trees = ({root} | sharing.anchors.get(provider, frozenset())) if expand else {root}
    return sorted(tree for tree in trees if rule.allows(tree))


def granular_options(
    rows: Iterable[tuple[int, int]], sharing: SharingMap, rule: TreeRule
) -> Options:
    """Rows are (provider, root) of providers meeting the whole group."""
    options: Options = {}
    for provider, root in rows:
        for anchor in _served_trees(provider, root, sharing, rule, expand=True):
            options.setdefault(anchor, [[]])[0].append(provider)
    if sharing.providers:
        for slots in options.values():
            slots[0].sort()
    return options


def _add_with_sharing(
    by_anchor: dict[int, dict[int, list[int]]],
    rows: Iterable[tuple[int, int, int]],
    sharing: SharingMap,
    rule: TreeRule,
    member_of: Sequence[frozenset[int]],
    in_tree: bool,
) -> None:
    for provider, root, class_id in rows:
        if provider not in sharing.providers:
            by_anchor.setdefault(root, {}).setdefault(class_id, []).append(provider)
            continue
        expand = not in_tree and sharing.member_of(provider, member_of)
        for anchor in _served_trees(provider, root, sharing, rule, expand):
            by_anchor.setdefault(anchor, {}).setdefault(class_id, []).append(provider)


def unsuffixed_options(
    rows: Iterable[tuple[int, int, int]],
    class_ids: Sequence[int],
    sharing: SharingMap,
    rule: TreeRule,
    *,
    member_of: Sequence[frozenset[int]] = (),
    in_tree: bool = False,
) -> Options:
    """Rows are (provider, root, class). Only trees with a provider for every
    class are kept. A sharing provider serves other trees only when the group
    is not limited to one tree and the provider itself is in ``member_of``."""
    by_anchor: dict[int, dict[int, list[int]]] = {}
    if not sharing.providers:
        for provider, root, class_id in rows:
            by_anchor.setdefault(root, {}).setdefault(class_id, []).append(provider)
    else:
        _add_with_sharing(by_anchor, rows, sharing, rule, member_of, in_tree)
    # Rows come ordered by provider; only sharing providers join out of order.
    order = sorted if sharing.providers else list
    return {
        anchor: [order(by_class[class_id]) for class_id in class_ids]
        for anchor, by_class in by_anchor.items()
        if len(by_class) == len(class_ids)
    }
