"""Fresh databases for a test run: a SQLite file or a PostgreSQL database of its own.

Every run (and every xdist worker) migrates its own database once; tests
then share it and ``clean`` empties it between tests, keeping the
standard resource classes and traits that start-up syncs.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.db import migrations
from placement_api.db.engine import create_engine
from placement_api.domain import feed_index

BACKENDS = [
    b.strip() for b in os.environ.get("PLACEMENT_TEST_BACKENDS", "sqlite,postgresql").split(",")
]
PG_ADMIN_URL = os.environ.get("PLACEMENT_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")

# Child tables first, so plain DELETEs satisfy the foreign keys.
TABLES_IN_DELETE_ORDER = [
    "server_group_members",
    "server_groups",
    "allocations",
    "consumers",
    "users",
    "projects",
    "consumer_types",
    "inventories",
    "resource_provider_traits",
    "resource_provider_aggregates",
    "placement_aggregates",
    "resource_providers",
]


def _pg_host_url(database: str) -> str:
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    return f"{base}/{database}"


async def _pg_admin(statement: str) -> None:
    connection = await asyncpg.connect(PG_ADMIN_URL)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def _run_id() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return f"{worker}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="placement-test-") as directory:
        url = f"sqlite+aiosqlite:///{Path(directory) / 'placement.sqlite'}"
        migrations.upgrade(url)
        yield url


@contextmanager
def migrated_database(backend: str) -> Iterator[str]:
    """A new database of ``backend``, migrated, dropped afterwards. Synchronous:
    the migration runs its own event loop."""
    if backend == "sqlite":
        with sqlite_database() as url:
            yield url
        return
    name, url = asyncio.run(create_pg_database())
    try:
        migrations.upgrade(url)
        yield url
    finally:
        asyncio.run(drop_pg_database(name))


async def create_pg_database() -> tuple[str, str]:
    name = f"placement_test_{_run_id()}"
    await _pg_admin(f'CREATE DATABASE "{name}"')
    # A commit no longer waits for its WAL flush (3 to 4 ms each on the CI machine,
    # thousands per run); what other sessions see, and when, is unchanged. A test
    # of a crash uses its own cluster (pg_cluster), which is durable.
    await _pg_admin(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    return name, _pg_host_url(name).replace("postgresql://", "postgresql+asyncpg://", 1)


async def drop_pg_database(name: str) -> None:
    await _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def empty(url: str) -> None:
    """``clean`` for code outside an event loop (live-server tests, sync fixtures)."""

    async def run() -> None:
        engine = create_engine(url)
        try:
            await clean(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


async def clean(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        for table in TABLES_IN_DELETE_ORDER:
            await connection.execute(text(f"DELETE FROM {table}"))
        await connection.execute(
            text("DELETE FROM traits WHERE name LIKE 'CUSTOM\\_%' ESCAPE '\\'")
        )
        await connection.execute(
            text("DELETE FROM resource_classes WHERE name LIKE 'CUSTOM\\_%' ESCAPE '\\'")
        )
        # Everything the feed told of is gone, as after a restore: a new epoch
        # tells those who keep copies (schedulers, the API's provider index).
        await connection.execute(feed_index.NEW_EPOCH, feed_index.new_epoch("clean"))
