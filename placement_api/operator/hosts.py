"""``placement-api host disable|enable``: a compute host out of (or back into) scheduling.

As nova-manage's service disable: ``COMPUTE_STATUS_DISABLED`` is added to or
taken from the host's root provider, every other trait kept. The write names
the generation read in the same transaction; a writer that got in between
(the agent, the API) moves it, the compare-and-swap refuses, and the whole
read-modify-write is tried again in a new transaction. The change is recorded
in the change feed like any trait write (schedulers follow it), with a
``host_status`` entry beside it carrying the operator's reason.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy import or_
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.engine import create_engine
from placement_api.db.models import ResourceProvider
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes, providers, traits
from placement_api.domain.changes import recording_session_factory
from placement_api.services.standard_names import write_standard_names

DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"
HOST_STATUS = "host_status"
# Attempts of the read-modify-write before giving up; each lost race is a
# write that committed in between, so a few suffice.
ATTEMPTS = 10


class HostNotFound(Exception):
    """No root provider has that name or uuid."""


class ConflictsPersisted(Exception):
    """Every attempt lost its generation race."""


@dataclass(frozen=True)
class HostStatusChange:
    uuid: str
    name: str
    disabled: bool
    changed: bool
    reason: str | None


async def set_disabled(
    database_url: str, host: str, *, disabled: bool, reason: str | None = None
) -> HostStatusChange:
    engine = create_engine(database_url, pool_size=1)
    factory = recording_session_factory(engine)
    try:
        # The trait is standard: a database only migrated (or imported) may not have it yet.
        await write_standard_names(factory)
        return await _set_disabled(factory, host, disabled, reason)
    finally:
        await engine.dispose()


async def _set_disabled(
    factory: SessionFactory, host: str, disabled: bool, reason: str | None
) -> HostStatusChange:
    for attempt in range(ATTEMPTS):
        try:
            async with unit_of_work(factory, write=True) as session:
                return await _write(session, host, disabled, reason)
        except errors.ConcurrentUpdate:
            await asyncio.sleep(0.01 * (attempt + 1))
    raise ConflictsPersisted(
        f"{host}: its provider changed under each of {ATTEMPTS} attempts; try again"
    )


async def _write(
    session: AsyncSession, host: str, disabled: bool, reason: str | None
) -> HostStatusChange:
    provider = await find_host(session, host)
    current = {trait.name for trait in (await traits.provider_traits(session, provider)).traits}
    if (DISABLED_TRAIT in current) == disabled:
        return HostStatusChange(provider.uuid, provider.name, disabled, False, reason)
    wanted = current | {DISABLED_TRAIT} if disabled else current - {DISABLED_TRAIT}
    await traits.replace_provider_traits(
        session, provider, sorted(wanted), expected_generation=provider.generation
    )
    action = "disabled" if disabled else "enabled"
    changes.record(session, HOST_STATUS, action, provider.uuid, name=provider.name, reason=reason)
    return HostStatusChange(provider.uuid, provider.name, disabled, True, reason)


async def find_host(session: AsyncSession, host: str) -> providers.ProviderRecord:
    """The root provider named ``host``, or whose uuid it is."""
    statement = providers.record_query().where(
        ResourceProvider.parent_provider_id.is_(None),
        or_(ResourceProvider.name == host, ResourceProvider.uuid == host),
    )
    found = await providers.run_query(session, statement)
    if not found:
        raise HostNotFound(f"no host (root resource provider) named {host!r} or with that uuid")
    return found[0]
