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
from typing import Literal

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

from placement_api.db.models import (
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import IdColumn, chunked, fetch_all, id_in
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest
from placement_api.domain.capacity import fits_clause


@dataclass(frozen=True)
class RootWindow:
    """Only trees whose root id is in [first, last]."""

    first: int
    last: int

    def __contains__(self, root: int) -> bool:
        return self.first <= root <= self.last


# Which rows a group statement reads: every tree (None), the trees of a
# window of root ids, or only sharing providers (which serve trees anywhere).
RowScope = RootWindow | Literal["sharing"] | None


def _sharing_ids() -> Select[int]:
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


def _tree_level(rule: ColumnElement[bool], provider: IdColumn) -> ColumnElement[bool]:
    """A tree-level rule, waived for sharing providers (checked per anchor later)."""
    return or_(rule, provider.in_(_sharing_ids()))


def _may_have_traits(
    any_of: frozenset[int], root: IdColumn, provider: IdColumn
) -> ColumnElement[bool]:
    """A tree can cover ``any_of`` only if one of its providers, or a sharing
    provider, has one of the traits: rows of other trees are left out."""
    in_tree = select(ResourceProvider.root_provider_id).join(
        ProviderTrait, ProviderTrait.resource_provider_id == ResourceProvider.id
    )
    sharing_has = select(ProviderTrait.resource_provider_id).where(
        ProviderTrait.trait_id.in_(any_of),
        ProviderTrait.resource_provider_id.in_(_sharing_ids()),
    )
    return or_(
        root.in_(in_tree.where(ProviderTrait.trait_id.in_(any_of))),
        provider.in_(_sharing_ids()),
        sharing_has.exists(),
    )


def _provider_filters(
    group: ResolvedGroup, request: ResolvedRequest, scope: RowScope
) -> list[ColumnElement[bool]]:
    provider, root = ResourceProvider.id, ResourceProvider.root_provider_id
    conditions: list[ColumnElement[bool]] = []
    if isinstance(scope, RootWindow):
        conditions.append(root.between(scope.first, scope.last))
    elif scope == "sharing":
        conditions.append(provider.in_(_sharing_ids()))
    if group.forbidden:
        conditions.append(~_with_traits(provider, group.forbidden))
    if group.forbidden_aggregates:
        conditions.append(~_in_aggregates(provider, group.forbidden_aggregates))
    if group.tree_root is not None:
        conditions.append(root == group.tree_root)
    if request.root_required or request.root_forbidden:
        conditions.append(_tree_level(root_rule(request, root), provider))
    return conditions


def granular_statement(
    group: ResolvedGroup, request: ResolvedRequest, scope: RowScope = None
) -> Select[int, int | None]:
    """Providers that alone meet a suffixed group: every class, trait and aggregate."""
    provider = ResourceProvider.id
    conditions = _provider_filters(group, request, scope)
    for class_id, amount in sorted(group.amounts.items()):
        conditions.append(
            provider.in_(
                select(Inventory.resource_provider_id).where(
                    Inventory.resource_class_id == class_id, fits_clause(amount)
                )
            )
        )
    conditions.append(_has_all(provider, group.required))
    conditions.append(_member_of_all(provider, group.member_of))
    return (
        select(ResourceProvider.id, ResourceProvider.root_provider_id)
        .where(*conditions)
        .order_by(ResourceProvider.id)
    )


def unsuffixed_statement(
    group: ResolvedGroup, request: ResolvedRequest, scope: RowScope = None
) -> Select[int, int | None, int]:
    """One row per (provider, class) the provider can supply for the unsuffixed group.

    Required traits are not filtered here: the providers chosen for the group
    must have them between them, which ``search`` checks per combination.
    """
    provider, root = ResourceProvider.id, ResourceProvider.root_provider_id
    conditions = _provider_filters(group, request, scope)
    conditions.append(
        or_(
            *(
                and_(Inventory.resource_class_id == class_id, fits_clause(amount))
                for class_id, amount in sorted(group.amounts.items())
            )
        )
    )
    if group.member_of:
        # An aggregate on the root spans its whole tree.
        conditions.append(
            or_(_member_of_all(provider, group.member_of), _member_of_all(root, group.member_of))
        )
    if group.forbidden_aggregates:
        conditions.append(_tree_level(~_in_aggregates(root, group.forbidden_aggregates), provider))
    conditions.extend(_may_have_traits(any_of, root, provider) for any_of in group.required)
    return (
        select(Inventory.resource_provider_id, root, Inventory.resource_class_id)
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .where(*conditions)
        .order_by(root, Inventory.resource_provider_id)
    )


async def granular_rows(
    session: AsyncSession,
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
) -> list[tuple[int, int]]:
    rows = await fetch_all(session, granular_statement(group, request, scope))
    return [(provider, root or provider) for provider, root in rows]


async def unsuffixed_rows(
    session: AsyncSession,
    group: ResolvedGroup,
    request: ResolvedRequest,
    scope: RowScope = None,
) -> list[tuple[int, int, int]]:
    rows = await fetch_all(session, unsuffixed_statement(group, request, scope))
    return [(provider, root or provider, class_id) for provider, root, class_id in rows]


async def root_id_range(session: AsyncSession) -> tuple[int, int]:
    """The lowest and highest root ids ((0, -1) when there are no providers)."""
    root = ResourceProvider.root_provider_id
    lowest, highest = (await session.execute(select(func.min(root), func.max(root)))).one()
    return (lowest, highest) if lowest is not None and highest is not None else (0, -1)


async def sharing_provider_ids(session: AsyncSession) -> frozenset[int]:
    return frozenset((await session.execute(_sharing_ids())).scalars())


async def aggregates_of(session: AsyncSession, provider_ids: Iterable[int]) -> dict[int, set[int]]:
    found: dict[int, set[int]] = {}
    for batch in chunked(sorted(provider_ids)):
        rows = await fetch_all(
            session,
            select(ProviderAggregate.resource_provider_id, ProviderAggregate.aggregate_id).where(
                ProviderAggregate.resource_provider_id.in_(batch)
            ),
        )
        for provider, aggregate in rows:
            found.setdefault(provider, set()).add(aggregate)
    return found


async def roots_by_aggregate(
    session: AsyncSession, aggregate_ids: Iterable[int]
) -> dict[int, set[int]]:
    """For each aggregate, the roots of the trees that have a member in it."""
    found: dict[int, set[int]] = {}
    for batch in chunked(sorted(aggregate_ids)):
        rows = await fetch_all(
            session,
            select(ProviderAggregate.aggregate_id, ResourceProvider.root_provider_id)
            .join(ResourceProvider, ResourceProvider.id == ProviderAggregate.resource_provider_id)
            .where(ProviderAggregate.aggregate_id.in_(batch))
            .distinct(),
        )
        for aggregate, root in rows:
            if root is not None:
                found.setdefault(aggregate, set()).add(root)
    return found


async def roots_with_any_trait(
    session: AsyncSession, trait_ids: Iterable[int]
) -> dict[int, set[int]]:
    """Root provider -> which of ``trait_ids`` it has (roots with none are absent)."""
    rows = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id, ProviderTrait.trait_id)
        .join(ResourceProvider, ResourceProvider.id == ProviderTrait.resource_provider_id)
        .where(
            ProviderTrait.trait_id.in_(sorted(trait_ids)),
            ResourceProvider.parent_provider_id.is_(None),
        ),
    )
    found: dict[int, set[int]] = {}
    for provider, trait in rows:
        found.setdefault(provider, set()).add(trait)
    return found


async def providers_in_aggregates(
    session: AsyncSession, aggregate_ids: Iterable[int]
) -> frozenset[int]:
    rows = await fetch_all(
        session,
        select(ProviderAggregate.resource_provider_id).where(
            ProviderAggregate.aggregate_id.in_(sorted(aggregate_ids))
        ),
    )
    return frozenset(provider for (provider,) in rows)


async def traits_of_providers_having(
    session: AsyncSession, trait_ids: Iterable[int]
) -> dict[int, frozenset[int]]:
    """Provider -> which of ``trait_ids`` it has, for providers having any of them."""
    rows = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id, ProviderTrait.trait_id).where(
            ProviderTrait.trait_id.in_(sorted(trait_ids))
        ),
    )
    found: dict[int, set[int]] = {}
    for provider, trait in rows:
        found.setdefault(provider, set()).add(trait)
    return {provider: frozenset(traits) for provider, traits in found.items()}


async def headroom(
    session: AsyncSession, class_ids: Iterable[int], provider_ids: Iterable[int]
) -> dict[tuple[int, int], int]:
    """(provider, class) -> the most one candidate may take: free capacity, at most max_unit."""
    found: dict[tuple[int, int], int] = {}
    classes = sorted(class_ids)
    for batch in chunked(sorted(provider_ids)):
        rows = await fetch_all(
            session,
            select(
                Inventory.resource_provider_id,
                Inventory.resource_class_id,
                Inventory.total,
                Inventory.reserved,
                Inventory.allocation_ratio,
                Inventory.used,
                Inventory.max_unit,
            ).where(
                Inventory.resource_class_id.in_(classes),
                id_in(session, Inventory.resource_provider_id, batch),
            ),
        )
        for provider, class_id, total, reserved, ratio, used, max_unit in rows:
            free = int((total - reserved) * ratio) - used
            found[(provider, class_id)] = min(free, max_unit)
    return found


async def parents_in_trees(session: AsyncSession, root_ids: Iterable[int]) -> dict[int, int | None]:
    found: dict[int, int | None] = {}
    for batch in chunked(sorted(root_ids)):
        rows = await fetch_all(
            session,
            select(ResourceProvider.id, ResourceProvider.parent_provider_id).where(
                id_in(session, ResourceProvider.root_provider_id, batch)
            ),
        )
        found.update((provider, parent) for provider, parent in rows)
    return found
