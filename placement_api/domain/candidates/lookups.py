"""Lookups around the candidate rows: sharing providers and the trees they
serve, tree-level traits, summed headroom, parents in trees. Each is one bulk
statement (or one per batch of ids)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    bindparam,
    func,
    literal,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from placement_api.db.driver import fetch_all, id_in
from placement_api.db.models import Inventory, ProviderAggregate, ProviderTrait, ResourceProvider
from placement_api.domain.candidates.fetching import IdColumn, T, chunked, id_batches
from placement_api.domain.candidates.provider_filters import Window, scope_condition
from placement_api.domain.candidates.queries import root_of
from placement_api.domain.candidates.summary_rows import FilterKind


def _members(kind: FilterKind, ids: Iterable[int]) -> tuple[IdColumn, ColumnElement[bool]]:
    """The provider column of a trait's holders or an aggregate's members,
    and the condition selecting those of ``ids``."""
    if kind == "trait":
        return ProviderTrait.resource_provider_id, ProviderTrait.trait_id.in_(sorted(ids))
    return ProviderAggregate.resource_provider_id, ProviderAggregate.aggregate_id.in_(sorted(ids))


async def member_counts(
    session: AsyncSession,
    trait_sets: Sequence[frozenset[int]] = (),
    aggregate_sets: Sequence[frozenset[int]] = (),
    up_to: int | None = None,
) -> tuple[int, ...]:
    """Per trait set, then per aggregate set: how many providers have one of
    the traits, or are in one of the aggregates; in one round trip. With
    ``up_to``, counting stops past it (a count above it is "more"), so a
    filter most hosts pass costs what the limit does, not the cloud."""
    sets: list[tuple[FilterKind, frozenset[int]]] = [("trait", ids) for ids in trait_sets]
    sets += [("aggregate", ids) for ids in aggregate_sets]
    parts: list[Select[int, int]] = []
    for index, (kind, ids) in enumerate(sets):
        provider, condition = _members(kind, ids)
        members = select(provider).where(condition)
        if up_to is not None:
            members = members.limit(up_to + 1)
        counted = members.subquery()
        parts.append(select(literal(index), func.count(counted.c[0].distinct())))
    counts = [0] * len(parts)
    if parts:
        for index, count in await fetch_all(session, union_all(*parts)):
            counts[index] = count
    return tuple(counts)


async def member_page(
    session: AsyncSession, kind: FilterKind, ids: frozenset[int], after: int, size: int
) -> list[tuple[int, int, int]]:
    """The next ``size`` (provider, root, trait or aggregate) of the providers
    having one of the traits or in one of the aggregates, by provider id past
    ``after``: read in order from the (trait or aggregate, provider) index,
    so a page costs its size."""
    provider, condition = _members(kind, ids)
    member = ProviderTrait.trait_id if kind == "trait" else ProviderAggregate.aggregate_id
    statement = (
        select(provider, root_of(provider), member)
        .where(condition, provider > bindparam("after", type_=Integer))
        .order_by(provider)
        .limit(bindparam("size", type_=Integer))
    )
    rows = await fetch_all(session, statement, {"after": after, "size": size})
    return [(found, root, of) for found, root, of in rows if found is not None and root is not None]


async def traits_of(
    session: AsyncSession, trait_ids: frozenset[int], provider_ids: Iterable[int]
) -> dict[int, set[int]]:
    """Provider -> which of ``trait_ids`` it has, for ``provider_ids`` (those
    with none are absent): probed by the (provider, trait) key."""
    found: dict[int, set[int]] = {}
    for batch in id_batches(session, provider_ids):
        rows = await fetch_all(
            session,
            select(ProviderTrait.resource_provider_id, ProviderTrait.trait_id).where(
                id_in(session, ProviderTrait.resource_provider_id, batch),
                ProviderTrait.trait_id.in_(sorted(trait_ids)),
            ),
        )
        for provider, trait in rows:
            found.setdefault(provider, set()).add(trait)
    return found


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
    session: AsyncSession, aggregate_ids: Iterable[int], window: Window | None = None
) -> dict[int, set[int]]:
    """For each aggregate, the roots of the trees (in ``window``, when given)
    that have a member in it."""
    found: dict[int, set[int]] = {}
    root = ResourceProvider.root_provider_id
    dialect = session.get_bind().dialect.name
    for batch in chunked(sorted(aggregate_ids)):
        statement = (
            select(ProviderAggregate.aggregate_id, root)
            .join(ResourceProvider, ResourceProvider.id == ProviderAggregate.resource_provider_id)
            .where(ProviderAggregate.aggregate_id.in_(batch))
            .distinct()
        )
        if window is not None:
            statement = statement.where(scope_condition(window, dialect))
        parameters = window.parameters() if window is not None else None
        for aggregate, found_root in await fetch_all(session, statement, parameters):
            if found_root is not None:
                found.setdefault(aggregate, set()).add(found_root)
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


async def headroom(
    session: AsyncSession, class_ids: Iterable[int], provider_ids: Iterable[int]
) -> dict[tuple[int, int], int]:
    """(provider, class) -> the most one candidate may take: free capacity, at most max_unit."""
    found: dict[tuple[int, int], int] = {}
    classes = sorted(class_ids)
    for batch in id_batches(session, provider_ids):
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


async def _by_provider(
    session: AsyncSession, value: InstrumentedAttribute[T], where: IdColumn, ids: Iterable[int]
) -> dict[int, T]:
    """Provider id -> ``value`` for the providers whose ``where`` column is in ``ids``."""
    found: dict[int, T] = {}
    for batch in id_batches(session, ids):
        rows = await fetch_all(
            session, select(ResourceProvider.id, value).where(id_in(session, where, batch))
        )
        found.update((provider, found_value) for provider, found_value in rows)
    return found


async def uuids_of(session: AsyncSession, provider_ids: Iterable[int]) -> dict[int, str]:
    return await _by_provider(session, ResourceProvider.uuid, ResourceProvider.id, provider_ids)


async def parents_in_trees(session: AsyncSession, root_ids: Iterable[int]) -> dict[int, int | None]:
    """Every provider of the trees with these roots -> its parent."""
    parent, root = ResourceProvider.parent_provider_id, ResourceProvider.root_provider_id
    return await _by_provider(session, parent, root, root_ids)
