"""Lookups around the candidate rows: sharing providers and the trees they
serve, tree-level traits, summed headroom, parents in trees. Each is one bulk
statement (or one per batch of ids)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Select, func, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from placement_api.db.driver import fetch_all, id_in
from placement_api.db.models import Inventory, ProviderAggregate, ProviderTrait, ResourceProvider
from placement_api.domain.candidates.fetching import IdColumn, T, chunked, id_batches
from placement_api.domain.candidates.queries import Window, scope_condition


async def member_counts(
    session: AsyncSession,
    trait_sets: Sequence[frozenset[int]] = (),
    aggregate_sets: Sequence[frozenset[int]] = (),
) -> tuple[int, ...]:
    """Per trait set, then per aggregate set: how many providers have one of
    the traits, or are in one of the aggregates; in one round trip."""
    parts: list[Select[int, int]] = []
    for index, traits in enumerate(trait_sets):
        parts.append(
            select(literal(index), func.count(ProviderTrait.resource_provider_id.distinct())).where(
                ProviderTrait.trait_id.in_(sorted(traits))
            )
        )
    for index, aggregates in enumerate(aggregate_sets, start=len(trait_sets)):
        parts.append(
            select(
                literal(index), func.count(ProviderAggregate.resource_provider_id.distinct())
            ).where(ProviderAggregate.aggregate_id.in_(sorted(aggregates)))
        )
    counts = [0] * len(parts)
    if parts:
        for index, count in await fetch_all(session, union_all(*parts)):
            counts[index] = count
    return tuple(counts)


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
