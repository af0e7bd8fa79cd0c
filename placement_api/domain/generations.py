"""Generation compare-and-swap: the optimistic lock every provider write takes."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.models import ResourceProvider
from placement_api.domain.timestamps import now


def provider_conflict(uuid: str) -> errors.ConcurrentUpdate:
    return errors.ConcurrentUpdate(
        f"resource provider generation conflict: the provider {uuid} has changed since its "
        "generation was read; re-read it and retry.",
        conflict=errors.CONFLICT_PROVIDER_GENERATION,
    )


async def bump_provider_generation(
    session: AsyncSession, provider_id: int, uuid: str, expected: int | None
) -> int:
    """Increment a provider's generation, but only from ``expected`` when given.

    The UPDATE takes the row lock, so concurrent writers to one provider are
    serialised here; a writer whose ``expected`` has moved gets a 409.
    """
    statement = (
        update(ResourceProvider)
        .where(ResourceProvider.id == provider_id)
        .values(generation=ResourceProvider.generation + 1, updated_at=now())
        .returning(ResourceProvider.generation)
    )
    if expected is not None:
        statement = statement.where(ResourceProvider.generation == expected)
    new_generation = (await session.execute(statement)).scalar_one_or_none()
    if new_generation is None:
        raise provider_conflict(uuid)
    return int(new_generation)
