"""Which aggregates each resource provider belongs to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from sqlalchemy import Table, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.dialect import insert_ignoring_duplicates
from placement_api.db.models import Aggregate, ProviderAggregate, ResourceProvider
from placement_api.domain import changes
from placement_api.domain.providers import ProviderRecord
from placement_api.domain.timestamps import now
from placement_api.domain.traits import bump_checked_generation


async def provider_aggregates(session: AsyncSession, provider_id: int) -> list[str]:
    rows = await session.scalars(
        select(Aggregate.uuid)
        .join(ProviderAggregate, ProviderAggregate.aggregate_id == Aggregate.id)
        .where(ProviderAggregate.resource_provider_id == provider_id)
        .order_by(Aggregate.id)
    )
    return list(rows)


async def _aggregate_ids(session: AsyncSession, uuids: list[str]) -> list[int]:
    """Ids of the aggregates named by ``uuids``, creating rows on first use."""
    if not uuids:
        return []
    created = now()
    # Ignoring duplicates lets requests that name the same new aggregate at once all
    # succeed; inserting in sorted order keeps two of them from deadlocking.
    await insert_ignoring_duplicates(
        session,
        cast(Table, Aggregate.__table__),
        [{"uuid": uuid, "created_at": created} for uuid in sorted(uuids)],
    )
    return list(await session.scalars(select(Aggregate.id).where(Aggregate.uuid.in_(uuids))))


async def _link_exactly(
    session: AsyncSession, provider_id: int, aggregate_ids: Iterable[int]
) -> None:
    wanted = set(aggregate_ids)
    linked = ProviderAggregate.resource_provider_id == provider_id
    current = set(
        (await session.scalars(select(ProviderAggregate.aggregate_id).where(linked))).all()
    )
    if current - wanted:
        await session.execute(
            delete(ProviderAggregate).where(
                linked, ProviderAggregate.aggregate_id.in_(current - wanted)
            )
        )
    if wanted - current:
        created = now()
        await session.execute(
            insert(ProviderAggregate),
            [
                {
                    "resource_provider_id": provider_id,
                    "aggregate_id": aggregate_id,
                    "created_at": created,
                }
                for aggregate_id in sorted(wanted - current)
            ],
        )


async def replace_provider_aggregates(
    session: AsyncSession,
    provider: ProviderRecord,
    uuids: list[str],
    *,
    expected_generation: int | None,
) -> int:
    """Make ``uuids`` the provider's whole aggregate set; returns its generation after.

    With ``expected_generation`` (1.19+) the generation is checked and bumped.
    Without it (1.1-1.18) upstream leaves the generation alone, and clients
    rely on that; the row lock still serialises writers to one provider.
    """
    if expected_generation is None:
        await session.execute(
            select(ResourceProvider.id).where(ResourceProvider.id == provider.id).with_for_update()
        )
        generation = provider.generation
    else:
        generation = await bump_checked_generation(session, provider, expected_generation)
    await _link_exactly(session, provider.id, await _aggregate_ids(session, uuids))
    changes.provider_aggregates_changed(session, provider.uuid, generation, uuids)
    return generation
