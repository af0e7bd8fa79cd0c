"""Traits: the catalogue of trait names, and the trait set of each provider."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, delete, exists, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.models import ProviderTrait, Trait
from placement_api.domain import changes
from placement_api.domain.generations import bump_provider_generation
from placement_api.domain.providers import ProviderRecord
from placement_api.domain.standard_names import CUSTOM_PREFIX
from placement_api.domain.timestamps import newest, now


@dataclass(frozen=True)
class TraitRecord:
    id: int
    name: str
    created_at: datetime | None
    updated_at: datetime | None

    @property
    def last_modified(self) -> datetime | None:
        # Upstream takes a row's update time when it has one, else its creation time.
        return self.updated_at or self.created_at


@dataclass(frozen=True)
class TraitQuery:
    """Filters of ``GET /traits``; None means "not filtered on"."""

    names: list[str] | None = None
    prefix: str | None = None
    associated: bool | None = None


@dataclass(frozen=True)
class ProviderTraitSet:
    traits: list[TraitRecord]
    generation: int

    @property
    def last_modified(self) -> datetime | None:
        return newest(*(trait.last_modified for trait in self.traits))


_COLUMNS = (Trait.id, Trait.name, Trait.created_at, Trait.updated_at)
_TraitSelect = Select[int, str, datetime, datetime | None]


async def _fetch(session: AsyncSession, statement: _TraitSelect) -> list[TraitRecord]:
    rows = await session.execute(statement.order_by(Trait.name))
    return [TraitRecord(*row) for row in rows]


async def bump_checked_generation(
    session: AsyncSession, provider: ProviderRecord, expected: int
) -> int:
    """Bump the generation of a provider the client saw at ``expected``; 409 if it moved.

    The first check gives upstream's message for the common case; the bump's
    compare-and-swap still catches a writer that commits in between.
    """
    if provider.generation != expected:
        raise errors.ConcurrentUpdate(
            "Resource provider's generation already changed. Please update the generation "
            "and try again.",
            conflict=errors.CONFLICT_PROVIDER_GENERATION,
        )
    return await bump_provider_generation(session, provider.id, provider.uuid, expected)


def _not_found(name: str) -> errors.NotFound:
    return errors.NotFound(f"No such trait(s): {name}.")


async def list_traits(session: AsyncSession, query: TraitQuery) -> list[TraitRecord]:
    statement = select(*_COLUMNS)
    if query.names is not None:
        statement = statement.where(Trait.name.in_(query.names))
    if query.prefix is not None:
        # substr rather than LIKE: "_" is a LIKE wildcard and SQLite's LIKE ignores case.
        statement = statement.where(func.substr(Trait.name, 1, len(query.prefix)) == query.prefix)
    if query.associated is not None:
        in_use = exists().where(ProviderTrait.trait_id == Trait.id)
        statement = statement.where(in_use if query.associated else ~in_use)
    return await _fetch(session, statement)


async def find_trait(session: AsyncSession, name: str) -> TraitRecord | None:
    found = await _fetch(session, select(*_COLUMNS).where(Trait.name == name))
    return found[0] if found else None


async def get_trait(session: AsyncSession, name: str) -> TraitRecord:
    found = await find_trait(session, name)
    if found is None:
        raise _not_found(name)
    return found


async def ensure_custom_trait(session: AsyncSession, name: str) -> tuple[TraitRecord, bool]:
    """The trait named ``name``, created if missing; True when this call created it."""
    existing = await find_trait(session, name)
    if existing is not None:
        return existing, False
    try:
        async with session.begin_nested():
            await session.execute(insert(Trait).values(name=name, created_at=now()))
    except IntegrityError:
        # A concurrent request created it between the look-up and the insert.
        return await get_trait(session, name), False
    changes.trait_changed(session, changes.CREATED, name)
    return await get_trait(session, name), True


async def delete_trait(session: AsyncSession, name: str) -> None:
    # The row lock orders this against provider trait writes, which share-lock
    # the traits they link: either they see the trait gone, or we see it in use.
    locked = select(*_COLUMNS).where(Trait.name == name).with_for_update()
    found = await _fetch(session, locked)
    if not found:
        raise _not_found(name)
    if not name.startswith(CUSTOM_PREFIX):
        raise errors.BadRequest(f"Cannot delete standard trait {name}.")
    if await session.scalar(select(exists().where(ProviderTrait.trait_id == found[0].id))):
        raise errors.Conflict(f"The trait {name} is in use by a resource provider.")
    await session.execute(delete(Trait).where(Trait.id == found[0].id))
    changes.trait_changed(session, changes.DELETED, name)


async def provider_traits(session: AsyncSession, provider: ProviderRecord) -> ProviderTraitSet:
    statement = (
        select(*_COLUMNS)
        .join(ProviderTrait, ProviderTrait.trait_id == Trait.id)
        .where(ProviderTrait.resource_provider_id == provider.id)
    )
    return ProviderTraitSet(await _fetch(session, statement), provider.generation)


async def _share_locked_traits(session: AsyncSession, names: list[str]) -> list[TraitRecord]:
    statement = select(*_COLUMNS).where(Trait.name.in_(set(names))).with_for_update(read=True)
    found = await _fetch(session, statement)
    known = {trait.name for trait in found}
    missing = [name for name in dict.fromkeys(names) if name not in known]
    if missing:
        raise errors.BadRequest(f"No such trait {', '.join(missing)}")
    return found


async def _link_exactly(session: AsyncSession, provider_id: int, trait_ids: Iterable[int]) -> None:
    wanted = set(trait_ids)
    linked = ProviderTrait.resource_provider_id == provider_id
    current = set((await session.scalars(select(ProviderTrait.trait_id).where(linked))).all())
    if current - wanted:
        await session.execute(
            delete(ProviderTrait).where(linked, ProviderTrait.trait_id.in_(current - wanted))
        )
    if wanted - current:
        created = now()
        await session.execute(
            insert(ProviderTrait),
            [
                {"resource_provider_id": provider_id, "trait_id": trait_id, "created_at": created}
                for trait_id in sorted(wanted - current)
            ],
        )


async def replace_provider_traits(
    session: AsyncSession, provider: ProviderRecord, names: list[str], *, expected_generation: int
) -> ProviderTraitSet:
    """Make ``names`` the provider's whole trait set, if ``expected_generation`` is current."""
    generation = await bump_checked_generation(session, provider, expected_generation)
    traits = await _share_locked_traits(session, names)
    await _link_exactly(session, provider.id, (trait.id for trait in traits))
    changes.provider_traits_changed(session, provider.uuid, generation, names)
    return ProviderTraitSet(traits, generation)


async def clear_provider_traits(session: AsyncSession, provider: ProviderRecord) -> None:
    """Remove every trait from the provider (and bump its generation)."""
    generation = await bump_provider_generation(session, provider.id, provider.uuid, None)
    await session.execute(
        delete(ProviderTrait).where(ProviderTrait.resource_provider_id == provider.id)
    )
    changes.provider_traits_changed(session, provider.uuid, generation, [])
