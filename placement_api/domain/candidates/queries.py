"""SQL for allocation candidates: which providers can serve each request group.

One statement per request group. A suffixed (granular) group returns the
``(provider, root)`` pairs of providers that meet the whole group alone; the
unsuffixed group returns ``(provider, root, class)`` rows, one per class a
provider can supply, because its classes may come from different providers
of a tree. Capacity is ``capacity.fits_clause`` on the inventory row (its
``used`` column is kept current by every allocation write), so no query
re-aggregates allocations.

Which providers a statement reads (its scope) and the filters that leave
providers out are ``provider_filters``'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Select, and_, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.selectable import LateralFromClause, Subquery
from sqlalchemy.util import LRUCache

from placement_api.db.driver import AnySelect, fetch_all
from placement_api.db.engine_caches import caches_of
from placement_api.db.models import Inventory, ProviderAggregate, ProviderTrait, ResourceProvider
from placement_api.domain.candidates.fetching import IdColumn
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest
from placement_api.domain.candidates.provider_filters import (
    WIDE_WINDOW,
    RootList,
    RootWindow,
    RowScope,
    Window,
    in_scope,
    outside_aggregates,
    provider_filters,
    tree_level,
    with_traits,
)
from placement_api.domain.capacity import fits_clause


def _in_aggregates(column: IdColumn, aggregate_ids: Iterable[int]) -> ColumnElement[bool]:
    return column.in_(
        select(ProviderAggregate.resource_provider_id).where(
            ProviderAggregate.aggregate_id.in_(aggregate_ids)
        )
    )


def _has_all(column: IdColumn, groups: Sequence[frozenset[int]]) -> ColumnElement[bool]:
    return and_(true(), *(with_traits(column, ids) for ids in groups))


def _member_of_all(column: IdColumn, member_of: Sequence[frozenset[int]]) -> ColumnElement[bool]:
    return and_(true(), *(_in_aggregates(column, ids) for ids in member_of))


def root_id() -> ColumnElement[int]:
    """The provider's root (itself for a root), never NULL."""
    return func.coalesce(ResourceProvider.root_provider_id, ResourceProvider.id)


def root_of(provider: IdColumn) -> ColumnElement[int | None]:
    """The root of ``provider``, looked up row by row: a join would have the
    planner merge with every provider up to the last one read."""
    return select(root_id()).where(ResourceProvider.id == provider).scalar_subquery()


def _tree_has_trait(any_of: frozenset[int], root: IdColumn) -> ColumnElement[bool]:
    """Some provider of the tree has one of the traits."""
    return root.in_(
        select(ResourceProvider.root_provider_id)
        .join(ProviderTrait, ProviderTrait.resource_provider_id == ResourceProvider.id)
        .where(ProviderTrait.trait_id.in_(any_of))
    )


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


def granular_statement(
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
    fenced: bool = False,
    dialect: str = "postgresql",
) -> Select[int, int]:
    """Providers that alone meet a suffixed group: every class, trait and aggregate."""
    provider = ResourceProvider.id
    statement = in_scope(
        select(provider, root_id()).select_from(ResourceProvider), scope, fenced, dialect
    )
    # One inventory row per class, found by the (provider, class) key.
    for index, (class_id, amount) in enumerate(sorted(group.amounts.items())):
        item, condition = _fitting({class_id: amount}, fenced, f"fitting_{index}")
        statement = statement.join(item, condition)
    conditions = provider_filters(group, request, scope)
    conditions.append(_has_all(provider, group.required))
    conditions.append(_member_of_all(provider, group.member_of))
    return statement.where(*conditions).order_by(provider)


def unsuffixed_statement(
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
    tree_traits: Sequence[frozenset[int]] = (),
    fenced: bool = False,
    dialect: str = "postgresql",
) -> Select[int, int, int]:
    """One row per (provider, class) the provider can supply for the unsuffixed group.

    Required traits are checked per combination by ``search``: the providers
    chosen for the group must have them between them. Here only trees that
    cannot have them are left out: ``tree_traits`` are the trait sets no
    sharing provider has, so a tree must hold one of each itself.
    """
    provider, root = ResourceProvider.id, ResourceProvider.root_provider_id
    conditions = provider_filters(group, request, scope)
    if group.member_of:
        # An aggregate on the root spans its whole tree.
        conditions.append(
            or_(_member_of_all(provider, group.member_of), _member_of_all(root, group.member_of))
        )
    if group.forbidden_aggregates:
        banned = outside_aggregates(root, group.forbidden_aggregates)
        conditions.append(tree_level(banned, provider, scope))
    for any_of in tree_traits:
        conditions.append(tree_level(_tree_has_trait(any_of, root), provider, scope))
    item, condition = _fitting(group.amounts, fenced, "fitting")
    statement = (
        select(item.c.resource_provider_id, root_id(), item.c.resource_class_id)
        .select_from(ResourceProvider)
        .join(item, condition)
    )
    return (
        in_scope(statement, scope, fenced, dialect)
        .where(*conditions)
        .order_by(root, item.c.resource_provider_id)
    )


# Windows of root ids up to this size read inventory provider by provider.
FENCED_WINDOW = 4096


def _fenced(dialect: str, scope: RowScope, narrow: bool) -> bool:
    """Read inventory provider by provider on PostgreSQL (SQLite has no
    LATERAL) for lists of roots, small windows and sharing providers, and for full reads where
    the group's own trait or aggregate filters leave few providers: then a
    few thousand index probes beat a scan of every inventory row. For
    everything else the planner's own choice is better: a rare class is found
    faster through its index."""
    if isinstance(scope, RootWindow):
        fits = scope.last - scope.first < FENCED_WINDOW
    else:
        # The sharing providers are few: probed, not joined to a class's
        # every inventory row.
        fits = isinstance(scope, RootList) or scope == "sharing" or (scope is None and narrow)
    return fits and dialect == "postgresql"


# Statements by everything they are built from but window bounds: a search
# reads window after window with the same statement, and requests of one
# shape repeat; building a statement costs about as much as running it.
# Kept per engine (``EngineCaches``).
def _statements() -> LRUCache[tuple[object, ...], AnySelect]:
    return LRUCache(256)


def _statement(
    session: AsyncSession, key: tuple[object, ...], build: Callable[[], AnySelect]
) -> AnySelect:
    kept = caches_of(session.get_bind().engine).own(_statements)
    found = kept.get(key)
    if found is None:
        found = kept[key] = build()
    return found


def _scope_key(scope: RowScope) -> object:
    if isinstance(scope, RootWindow):
        return "wide window" if scope.last - scope.first >= WIDE_WINDOW else "window"
    return "list" if isinstance(scope, RootList) else scope


def _root_rules_key(request: ResolvedRequest) -> tuple[object, ...]:
    return (tuple(sorted(request.root_required)), tuple(sorted(request.root_forbidden)))


async def _rows(
    session: AsyncSession, statement: AnySelect, scope: RowScope
) -> Sequence[tuple[Any, ...]]:
    parameters = scope.parameters() if isinstance(scope, Window) else None
    return await fetch_all(session, statement, parameters)


async def granular_rows(
    session: AsyncSession,
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
    narrow: bool = False,
) -> list[tuple[int, int]]:
    dialect = session.get_bind().dialect.name
    fenced = _fenced(dialect, scope, narrow)
    key = ("granular", dialect, group.criteria, _root_rules_key(request), _scope_key(scope), fenced)
    statement = _statement(
        session, key, lambda: granular_statement(group, request, scope, fenced, dialect)
    )
    return cast(list[tuple[int, int]], await _rows(session, statement, scope))


async def unsuffixed_rows(
    session: AsyncSession,
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
    tree_traits: Sequence[frozenset[int]] = (),
    narrow: bool = False,
) -> list[tuple[int, int, int]]:
    dialect = session.get_bind().dialect.name
    fenced = _fenced(dialect, scope, narrow)
    key = (
        "unsuffixed",
        dialect,
        group.criteria,
        _root_rules_key(request),
        _scope_key(scope),
        tuple(tree_traits),
        fenced,
    )
    statement = _statement(
        session,
        key,
        lambda: unsuffixed_statement(group, request, scope, tree_traits, fenced, dialect),
    )
    return cast(list[tuple[int, int, int]], await _rows(session, statement, scope))
