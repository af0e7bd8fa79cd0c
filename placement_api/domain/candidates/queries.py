"""SQL for allocation candidates: which providers can serve each request group.

One statement per request group. A suffixed (granular) group returns the
``(provider, root)`` pairs of providers that meet the whole group alone; the
unsuffixed group returns ``(provider, root, class)`` rows, one per class a
provider can supply, because its classes may come from different providers
of a tree. Capacity is ``capacity.fits_clause`` on the inventory row (its
``used`` column is kept current by every allocation write), so no query
re-aggregates allocations.

Rows of sharing providers are kept even when their own root fails a
tree-level rule (``root_required``, forbidden aggregates): they may still
serve other trees, which ``options`` decides per anchor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import os_traits
from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.selectable import LateralFromClause, Subquery

from placement_api.db.models import (
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import IdColumn, Ts, fetch_all
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest
from placement_api.domain.capacity import fits_clause


@dataclass(frozen=True)
class RootWindow:
    """Only trees whose root id is in [first, last]."""

    first: int
    last: int

    def __contains__(self, root: int) -> bool:
        return self.first <= root <= self.last


# Windows of root ids up to this size read inventory provider by provider.
FENCED_WINDOW = 4096

# Which rows a group statement reads: every tree (None), the trees of a
# window of root ids, or only sharing providers (which serve trees anywhere).
RowScope = RootWindow | Literal["sharing"] | None


def sharing_ids() -> Select[int]:
    shares = select(Trait.id).where(Trait.name == os_traits.MISC_SHARES_VIA_AGGREGATE)
    return select(ProviderTrait.resource_provider_id).where(
        ProviderTrait.trait_id == shares.scalar_subquery()
    )


def _with_traits(column: IdColumn, trait_ids: Iterable[int]) -> ColumnElement[bool]:
    return column.in_(
        select(ProviderTrait.resource_provider_id).where(ProviderTrait.trait_id.in_(trait_ids))
    )


def _in_aggregates(column: IdColumn, aggregate_ids: Iterable[int]) -> ColumnElement[bool]:
    return column.in_(
        select(ProviderAggregate.resource_provider_id).where(
            ProviderAggregate.aggregate_id.in_(aggregate_ids)
        )
    )


def _has_all(column: IdColumn, groups: Sequence[frozenset[int]]) -> ColumnElement[bool]:
    return and_(true(), *(_with_traits(column, ids) for ids in groups))


def _member_of_all(column: IdColumn, member_of: Sequence[frozenset[int]]) -> ColumnElement[bool]:
    return and_(true(), *(_in_aggregates(column, ids) for ids in member_of))


def root_rule(request: ResolvedRequest, root: IdColumn) -> ColumnElement[bool]:
    """``root_required``: the tree's root has these traits and lacks those."""
    conditions = [_with_traits(root, [trait]) for trait in sorted(request.root_required)]
    if request.root_forbidden:
        conditions.append(~_with_traits(root, request.root_forbidden))
    return and_(true(), *conditions)


def _tree_level(
    rule: ColumnElement[bool], provider: IdColumn, scope: RowScope
) -> ColumnElement[bool]:
    """A rule on the tree of a row's provider. Sharing providers serve other
    trees too, so their rows are exempt and ``options`` checks the rule per
    tree they serve: a window leaves their rows out (they are read on their
    own), the sharing scope skips the rule, a full read waives it for them."""
    if isinstance(scope, RootWindow):
        return rule
    if scope == "sharing":
        return true()
    return or_(rule, provider.in_(sharing_ids()))


def _root_id() -> ColumnElement[int]:
    """The provider's root (itself for a root), never NULL."""
    return func.coalesce(ResourceProvider.root_provider_id, ResourceProvider.id)


def _tree_has_trait(any_of: frozenset[int], root: IdColumn) -> ColumnElement[bool]:
    """Some provider of the tree has one of the traits."""
    return root.in_(
        select(ResourceProvider.root_provider_id)
        .join(ProviderTrait, ProviderTrait.resource_provider_id == ResourceProvider.id)
        .where(ProviderTrait.trait_id.in_(any_of))
    )


def _scope_condition(scope: RowScope) -> ColumnElement[bool]:
    if scope is None:
        return true()
    if scope == "sharing":
        return ResourceProvider.id.in_(sharing_ids())
    return ResourceProvider.root_provider_id.between(scope.first, scope.last)


def _in_scope(statement: Select[*Ts], scope: RowScope, fenced: bool) -> Select[*Ts]:
    """Limit rows to the scope's providers.

    Planners misjudge how many inventory rows the capacity test keeps (far
    too few), and then scan every inventory row of a class to find a scope's
    few. Fenced statements read inventory per provider, so a plain condition
    does; otherwise the scope's providers are materialised and read first.
    """
    if scope is None:
        return statement
    if fenced:
        return statement.where(_scope_condition(scope))
    chosen = select(ResourceProvider.id).where(_scope_condition(scope))
    providers = chosen.cte("scope_providers").prefix_with("MATERIALIZED")
    return statement.join(providers, providers.c[0] == ResourceProvider.id)


def _fits_one(amounts: dict[int, int]) -> ColumnElement[bool]:
    """The inventory row has room for its class's amount, for one of ``amounts``."""
    return or_(
        *(
            and_(Inventory.resource_class_id == class_id, fits_clause(amount))
            for class_id, amount in sorted(amounts.items())
        )
    )


def _fitting(
    amounts: dict[int, int], fenced: bool, name: str
) -> tuple[Subquery | LateralFromClause, ColumnElement[bool]]:
    """The provider's inventory rows with room for one of ``amounts``: a FROM
    item and its join condition. Fenced, it is a LATERAL subquery behind
    ``OFFSET 0``, which the planner must run provider by provider."""
    rows = select(Inventory.resource_provider_id, Inventory.resource_class_id).where(
        _fits_one(amounts)
    )
    if fenced:
        correlated = rows.where(Inventory.resource_provider_id == ResourceProvider.id)
        return correlated.offset(0).lateral(name), true()
    subquery = rows.subquery(name)
    return subquery, subquery.c.resource_provider_id == ResourceProvider.id


def _provider_filters(
    group: ResolvedGroup, request: ResolvedRequest, scope: RowScope
) -> list[ColumnElement[bool]]:
    provider, root = ResourceProvider.id, ResourceProvider.root_provider_id
    conditions: list[ColumnElement[bool]] = []
    if group.forbidden:
        conditions.append(~_with_traits(provider, group.forbidden))
    if group.forbidden_aggregates:
        conditions.append(~_in_aggregates(provider, group.forbidden_aggregates))
    if group.tree_root is not None:
        conditions.append(root == group.tree_root)
    if request.root_required or request.root_forbidden:
        conditions.append(_tree_level(root_rule(request, root), provider, scope))
    return conditions


def granular_statement(
    group: ResolvedGroup, request: ResolvedRequest, scope: RowScope = None, fenced: bool = False
) -> Select[int, int]:
    """Providers that alone meet a suffixed group: every class, trait and aggregate."""
    provider = ResourceProvider.id
    statement = _in_scope(select(provider, _root_id()).select_from(ResourceProvider), scope, fenced)
    # One inventory row per class, found by the (provider, class) key.
    for index, (class_id, amount) in enumerate(sorted(group.amounts.items())):
        item, condition = _fitting({class_id: amount}, fenced, f"fitting_{index}")
        statement = statement.join(item, condition)
    conditions = _provider_filters(group, request, scope)
    conditions.append(_has_all(provider, group.required))
    conditions.append(_member_of_all(provider, group.member_of))
    return statement.where(*conditions).order_by(provider)


def unsuffixed_statement(
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
    tree_traits: Sequence[frozenset[int]] = (),
    fenced: bool = False,
) -> Select[int, int, int]:
    """One row per (provider, class) the provider can supply for the unsuffixed group.

    Required traits are checked per combination by ``search``: the providers
    chosen for the group must have them between them. Here only trees that
    cannot have them are left out: ``tree_traits`` are the trait sets no
    sharing provider has, so a tree must hold one of each itself.
    """
    provider, root = ResourceProvider.id, ResourceProvider.root_provider_id
    conditions = _provider_filters(group, request, scope)
    if group.member_of:
        # An aggregate on the root spans its whole tree.
        conditions.append(
            or_(_member_of_all(provider, group.member_of), _member_of_all(root, group.member_of))
        )
    if group.forbidden_aggregates:
        banned = ~_in_aggregates(root, group.forbidden_aggregates)
        conditions.append(_tree_level(banned, provider, scope))
    for any_of in tree_traits:
        conditions.append(_tree_level(_tree_has_trait(any_of, root), provider, scope))
    item, condition = _fitting(group.amounts, fenced, "fitting")
    statement = (
        select(item.c.resource_provider_id, _root_id(), item.c.resource_class_id)
        .select_from(ResourceProvider)
        .join(item, condition)
    )
    return (
        _in_scope(statement, scope, fenced)
        .where(*conditions)
        .order_by(root, item.c.resource_provider_id)
    )


def _fenced(session: AsyncSession, scope: RowScope) -> bool:
    """Read inventory provider by provider for small windows on PostgreSQL
    (SQLite has no LATERAL). For everything else the planner's own choice is
    better: a rare class is found faster through its index."""
    if not isinstance(scope, RootWindow) or scope.last - scope.first >= FENCED_WINDOW:
        return False
    return session.get_bind().dialect.name == "postgresql"


async def granular_rows(
    session: AsyncSession,
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
) -> list[tuple[int, int]]:
    statement = granular_statement(group, request, scope, _fenced(session, scope))
    rows = await fetch_all(session, statement)
    return cast(list[tuple[int, int]], rows)


async def unsuffixed_rows(
    session: AsyncSession,
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
    tree_traits: Sequence[frozenset[int]] = (),
) -> list[tuple[int, int, int]]:
    statement = unsuffixed_statement(group, request, scope, tree_traits, _fenced(session, scope))
    rows = await fetch_all(session, statement)
    return cast(list[tuple[int, int, int]], rows)
