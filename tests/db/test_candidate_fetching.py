"""``fetch_all`` reuses compiled SQL across statements of one structure: the
values bound must always be the current statement's, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import Integer, Select, bindparam, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.driver import fetch_all, id_in
from placement_api.db.engine import create_engine
from placement_api.db.models import ResourceClass
from placement_api.domain.changes import recording_session_factory
from tests.support.client import PlacementClient


@pytest.fixture
async def session(database_url: str, api: PlacementClient) -> AsyncIterator[AsyncSession]:
    """A session on a database the API has started on (standard classes synced)."""
    engine = create_engine(database_url)
    try:
        async with recording_session_factory(engine)() as session:
            yield session
    finally:
        await engine.dispose()


async def _class_ids(session: AsyncSession, *names: str) -> list[int]:
    statement = select(ResourceClass.id).where(ResourceClass.name.in_(names))
    return sorted(ident for (ident,) in await fetch_all(session, statement))


async def test_statements_of_one_structure_bind_their_own_values(session: AsyncSession) -> None:
    vcpu, memory, disk = [
        await _class_ids(session, name) for name in ("VCPU", "MEMORY_MB", "DISK_GB")
    ]
    assert await _class_ids(session, "VCPU") == vcpu
    assert await _class_ids(session, "MEMORY_MB") == memory
    # Lists of another length expand to other SQL; each keeps its own values.
    assert await _class_ids(session, "VCPU", "DISK_GB") == sorted(vcpu + disk)
    assert await _class_ids(session, "MEMORY_MB", "DISK_GB") == sorted(memory + disk)


async def test_named_parameters_and_id_arrays_bind_per_call(session: AsyncSession) -> None:
    (vcpu,), (disk,) = await _class_ids(session, "VCPU"), await _class_ids(session, "DISK_GB")
    statement = select(ResourceClass.name).where(
        ResourceClass.id.between(bindparam("low", type_=Integer), bindparam("high", type_=Integer)),
        id_in(session, ResourceClass.id, [vcpu, disk]),
    )
    low, high = min(vcpu, disk), max(vcpu, disk)
    both = await fetch_all(session, statement, {"low": low, "high": high})
    assert sorted(name for (name,) in both) == ["DISK_GB", "VCPU"]
    only_low = await fetch_all(session, statement, {"low": low, "high": low})
    assert len(only_low) == 1


async def test_compound_statements_keep_their_tags(session: AsyncSession) -> None:
    def tagged(tag: str, name: str) -> Select[str, str]:
        return select(literal(tag), ResourceClass.name).where(ResourceClass.name == name)

    first = await fetch_all(session, union_all(tagged("a", "VCPU"), tagged("b", "DISK_GB")))
    second = await fetch_all(session, union_all(tagged("c", "MEMORY_MB"), tagged("d", "VCPU")))
    assert sorted(tuple(row) for row in first) == [("a", "VCPU"), ("b", "DISK_GB")]
    assert sorted(tuple(row) for row in second) == [("c", "MEMORY_MB"), ("d", "VCPU")]
