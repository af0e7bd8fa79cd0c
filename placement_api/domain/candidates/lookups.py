"""Lookups around the candidate rows: sharing providers and the trees they
serve, tree-level traits, summed headroom, tree shapes. Each is one bulk
statement (or one per batch of ids)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Select, func, literal, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from placement_api.db.models import Inventory, ProviderAggregate, ProviderTrait, ResourceProvider
from placement_api.domain.candidates.fetching import (
    IdColumn,
    T,
    chunked,
    fetch_all,
    id_batches,
    id_in,
)
from placement_api.domain.candidates.queries import root_id, sharing_ids


@dataclass(frozen=True)
class Overview:
    """What a search needs to know before reading any rows."""

    # The lowest and highest root ids ((0, -1) when there are no providers).
    roots: tuple[int, int]
    sharing: frozenset[int]
    # Per trait set, then per aggregate set asked about: how many providers
    # have one of the traits, or are in one of the aggregates.
    members: tuple[int, ...]


async def overview(
    session: AsyncSession,
    trait_sets: Sequence[frozenset[int]] = (),
    aggregate_sets: Sequence[frozenset[int]] = (),
) -> Overview:
    """The root id range, the sharing providers and the member counts, in one
    round trip: rows tagged by what they tell."""
    root = ResourceProvider.root_provider_id
    parts: list[Select[str, int | None, int | None]] = [
        select(literal("roots"), func.min(root), func.max(root)),
        select(literal("sharing"), sharing_ids().subquery().c[0], null()),
    ]
    for index, traits in enumerate(trait_sets):
        parts.append(
            select(
                literal("members"),
                literal(index),
                func.count(ProviderTrait.resource_provider_id.distinct()),
            ).where(ProviderTrait.trait_id.in_(sorted(traits)))
        )
    for index, aggregates in enumerate(aggregate_sets, start=len(trait_sets)):
        parts.append(
            select(
                literal("members"),
                literal(index),
                func.count(ProviderAggregate.resource_provider_id.distinct()),
            ).where(ProviderAggregate.aggregate_id.in_(sorted(aggregates)))
        )
    roots, sharing, members = (0, -1), set(), [0] * (len(trait_sets) + len(aggregate_sets))
    for kind, first, second in await fetch_all(session, union_all(*parts)):
        if kind == "roots" and first is not None and second is not None:
            roots = (first, second)
        elif kind == "sharing" and first is not None:
            sharing.add(first)
        elif kind == "members" and first is not None:
            members[first] = int(second or 0)
    return Overview(roots=roots, sharing=frozenset(sharing), members=tuple(members))


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


@dataclass(frozen=True)
class TraitHolders:
    """Providers having any of some traits: which of them each has, and its root."""

    traits: dict[int, frozenset[int]]
    roots: dict[int, int]

    def roots_having(self, any_of: frozenset[int]) -> frozenset[int]:
        """Roots of the trees where some provider has one of ``any_of``."""
        return frozenset(self.roots[p] for p, traits in self.traits.items() if traits & any_of)


async def trait_holders(session: AsyncSession, trait_ids: Collection[int]) -> TraitHolders:
    """The providers having any of ``trait_ids``."""
    rows = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id, root_id(), ProviderTrait.trait_id)
        .join(ResourceProvider, ResourceProvider.id == ProviderTrait.resource_provider_id)
        .where(ProviderTrait.trait_id.in_(sorted(trait_ids))),
    )
    roots = {provider: root for provider, root, _ in rows}
    if len(trait_ids) == 1:
        # The common case: every holder has the one trait; thousands share one set.
        return TraitHolders(dict.fromkeys(roots, frozenset(trait_ids)), roots)
    found: dict[int, set[int]] = {}
    for provider, _, trait in rows:
        found.setdefault(provider, set()).add(trait)
    return TraitHolders({p: frozenset(traits) for p, traits in found.items()}, roots)


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
