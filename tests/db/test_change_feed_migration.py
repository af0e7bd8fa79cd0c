"""Migration 0005 (room in each page of ``changes`` for the row version a
sequencing run writes): a database at 0004 with changes recorded, even
some not yet indexed, upgrades and keeps them; a downgrade undoes it."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from placement_api.db import migrations
from placement_api.db.engine import create_engine
from placement_api.db.session import unit_of_work
from placement_api.domain import changes, feed_index
from placement_api.domain.changes import recording_session_factory
from tests.support import databases


@pytest.fixture
async def fresh_url(backend: str) -> AsyncIterator[str]:
    """A database of the backend with no schema at all."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="placement-test-") as directory:
            yield f"sqlite+aiosqlite:///{Path(directory) / 'placement.sqlite'}"
        return
    name, url = await databases.create_pg_database()
    try:
        yield url
    finally:
        await databases.drop_pg_database(name)


async def _record(url: str, name: str) -> None:
    engine = create_engine(url)
    try:
        async with unit_of_work(recording_session_factory(engine), write=True) as session:
            changes.trait_changed(session, changes.CREATED, name)
    finally:
        await engine.dispose()


async def _feed(url: str) -> list[str]:
    """The names of the traits the feed recorded, after a sequencing run. In
    SQL of its own: the code's feed reads columns a downgraded schema lacks."""
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                head = await connection.scalar(
                    text("SELECT last_index FROM change_feed_head WHERE id = 1 FOR UPDATE")
                )
                await connection.execute(
                    feed_index._SEQUENCE,
                    {"head": head, "batch": feed_index.SEQUENCING_BATCH, "head_id": 1},
                )
            head = await connection.scalar(
                text("SELECT last_index FROM change_feed_head WHERE id = 1")
            )
            rows = (
                await connection.execute(
                    text("SELECT feed_index, details FROM changes ORDER BY feed_index")
                )
            ).all()
        assert [row.feed_index for row in rows] == list(range(1, int(head) + 1))
        return [str(_details(row.details)["name"]) for row in rows]
    finally:
        await engine.dispose()


def _details(value: object) -> dict[str, object]:
    found = json.loads(value) if isinstance(value, str) else value
    assert isinstance(found, dict)
    return found


async def _fillfactor(url: str) -> list[str] | None:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            found = await connection.scalar(
                text("SELECT reloptions FROM pg_class WHERE oid = 'changes'::regclass")
            )
            return None if found is None else list(found)
    finally:
        await engine.dispose()


async def test_upgrade_from_0004_keeps_the_feed_and_downgrade_undoes_it(
    fresh_url: str, backend: str
) -> None:
    await asyncio.to_thread(migrations.upgrade, fresh_url, "0004")
    await _record(fresh_url, "CUSTOM_BEFORE_UPGRADE_INDEXED")
    await _feed(fresh_url)
    # Left without an index on PostgreSQL: the upgrade must not lose it either.
    await _record(fresh_url, "CUSTOM_BEFORE_UPGRADE")
    await asyncio.to_thread(migrations.upgrade, fresh_url)
    await _record(fresh_url, "CUSTOM_AFTER_UPGRADE")
    assert await _feed(fresh_url) == [
        "CUSTOM_BEFORE_UPGRADE_INDEXED",
        "CUSTOM_BEFORE_UPGRADE",
        "CUSTOM_AFTER_UPGRADE",
    ]
    if backend == "postgresql":
        assert await _fillfactor(fresh_url) == ["fillfactor=50"]
    config = migrations.alembic_config(fresh_url)
    await asyncio.to_thread(command.downgrade, config, "0004")
    assert await migrations.current_revision(fresh_url) == "0004"
    if backend == "postgresql":
        assert await _fillfactor(fresh_url) is None
    assert len(await _feed(fresh_url)) == 3
