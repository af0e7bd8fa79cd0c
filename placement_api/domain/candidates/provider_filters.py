"""What narrows a request group's statement besides capacity: its scope (every
tree, a window of root ids, a list of roots, or only the sharing providers)
and the filters that leave providers out (forbidden traits and aggregates,
``in_tree``, ``root_required``).

Rows of sharing providers are kept even when their own root fails a
tree-level rule (``root_required``, forbidden aggregates): they may still
serve other trees, which ``options`` decides per anchor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import os_traits
from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    and_,
    any_,
    bindparam,
    exists,
    func,
    or_,
    select,
    true,
)

from placement_api.db.driver import Ts, in_bound_list
from placement_api.db.models import ProviderAggregate, ProviderTrait, ResourceProvider, Trait
from placement_api.domain.candidates.fetching import IdColumn
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest


@dataclass(frozen=True)
class RootWindow:
    """Only trees whose root id is in [first, last]."""

    first: int
    last: int

    def __contains__(self, root: int) -> bool:
        return self.first <= root <= self.last

    def parameters(self) -> dict[str, int]:
        """Values for the bounds statements bind (see ``scope_condition``)."""
        return {"window_first": self.first, "window_last": self.last}


@dataclass(frozen=True)
class RootList:
    """Only the trees with these roots (trees the request's filters leave)."""

    roots: tuple[int, ...]
    members: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.roots))

    def __contains__(self, root: int) -> bool:
        return root in self.members

    def parameters(self) -> dict[str, list[int]]:
        return {"window_roots": list(self.roots)}


# Windows of root ids this wide or wider are planned as they are, not read
# through their providers materialised first (hundreds of thousands of ids).
WIDE_WINDOW = 65536

# Which rows a group statement reads: every tree (None), the trees of a
# window of root ids or of a list of roots, or only sharing providers (which
# serve trees anywhere).
Window = RootWindow | RootList
RowScope = Window | Literal["sharing"] | None


def sharing_ids() -> Select[int]:
    shares = select(Trait.id).where(Trait.name == os_traits.MISC_SHARES_VIA_AGGREGATE)
    return select(ProviderTrait.resource_provider_id).where(
        ProviderTrait.trait_id == shares.scalar_subquery()
    )


def with_traits(column: IdColumn, trait_ids: Iterable[int]) -> ColumnElement[bool]:
    return column.in_(
        select(ProviderTrait.resource_provider_id).where(ProviderTrait.trait_id.in_(trait_ids))
    )


def without_traits(column: IdColumn, trait_ids: Iterable[int]) -> ColumnElement[bool]:
    """None of the traits. ``NOT EXISTS``, not ``NOT IN``: PostgreSQL must
    answer ``NOT IN`` from a hash of every holder, where an anti-join may
    probe the few providers a window holds."""
    return ~exists().where(
        ProviderTrait.resource_provider_id == column, ProviderTrait.trait_id.in_(trait_ids)
    )


def outside_aggregates(column: IdColumn, aggregate_ids: Iterable[int]) -> ColumnElement[bool]:
    """In none of the aggregates (``NOT EXISTS``, as ``without_traits``)."""
    return ~exists().where(
        ProviderAggregate.resource_provider_id == column,
        ProviderAggregate.aggregate_id.in_(aggregate_ids),
    )


def root_rule(request: ResolvedRequest, root: IdColumn) -> ColumnElement[bool]:
    """``root_required``: the tree's root has these traits and lacks those."""
    conditions = [with_traits(root, [trait]) for trait in sorted(request.root_required)]
    if request.root_forbidden:
        conditions.append(without_traits(root, request.root_forbidden))
    return and_(true(), *conditions)


def tree_level(
    rule: ColumnElement[bool], provider: IdColumn, scope: RowScope
) -> ColumnElement[bool]:
    """A rule on the tree of a row's provider. Sharing providers serve other
    trees too, so their rows are exempt and ``options`` checks the rule per
    tree they serve: a window leaves their rows out (they are read on their
    own), the sharing scope skips the rule, a full read waives it for them."""
    if isinstance(scope, Window):
        return rule
    if scope == "sharing":
        return true()
    return or_(rule, provider.in_(sharing_ids()))


def scope_condition(
    scope: RowScope, dialect: str, bounds_in_text: bool = False
) -> ColumnElement[bool]:
    """The providers in scope; a window's bounds are bound when the statement
    runs (``window.parameters()``), so that one statement serves every window.
    ``bounds_in_text`` writes them into its text instead, so that PostgreSQL
    plans it for them: a plan made once for any bounds (which it switches to
    after a few runs) assumes a few dozen providers, and reads a wide
    window's inventory provider by provider, several times slower."""
    if scope is None:
        return true()
    if scope == "sharing":
        if dialect == "postgresql":
            # As an array computed first: the planner then expects a few ids
            # and probes them, where for IN it guesses thousands and scans
            # every provider.
            return ResourceProvider.id == any_(func.array(sharing_ids().scalar_subquery()))
        return ResourceProvider.id.in_(sharing_ids())
    if isinstance(scope, RootList):
        return in_bound_list(ResourceProvider.root_provider_id, "window_roots", dialect)
    return ResourceProvider.root_provider_id.between(
        bindparam("window_first", type_=Integer, literal_execute=bounds_in_text),
        bindparam("window_last", type_=Integer, literal_execute=bounds_in_text),
    )


def in_scope(statement: Select[*Ts], scope: RowScope, fenced: bool, dialect: str) -> Select[*Ts]:
    """Limit rows to the scope's providers.

    Planners misjudge how many inventory rows the capacity test keeps (far
    too few), and then scan every inventory row of a class to find a scope's
    few. Fenced statements read inventory per provider, so a plain condition
    does; otherwise the scope's providers are materialised and read first.
    """
    if scope is None:
        return statement
    if fenced:
        return statement.where(scope_condition(scope, dialect))
    if isinstance(scope, RootWindow) and scope.last - scope.first >= WIDE_WINDOW:
        # The rest of the trees at once (nothing found so far, a rare class):
        # with the bounds in its text the planner sees how many providers
        # they hold, and finds a rare class through its index.
        return statement.where(scope_condition(scope, dialect, bounds_in_text=True))
    chosen = select(ResourceProvider.id).where(scope_condition(scope, dialect, bounds_in_text=True))
    providers = chosen.cte("scope_providers").prefix_with("MATERIALIZED")
    return statement.join(providers, providers.c[0] == ResourceProvider.id)


def provider_filters(
    group: ResolvedGroup, request: ResolvedRequest, scope: RowScope
) -> list[ColumnElement[bool]]:
    provider, root = ResourceProvider.id, ResourceProvider.root_provider_id
    conditions: list[ColumnElement[bool]] = []
    if group.forbidden:
        conditions.append(without_traits(provider, group.forbidden))
    if group.forbidden_aggregates:
        conditions.append(outside_aggregates(provider, group.forbidden_aggregates))
    if group.tree_root is not None:
        conditions.append(root == group.tree_root)
    if request.root_required or request.root_forbidden:
        conditions.append(tree_level(root_rule(request, root), provider, scope))
    return conditions
