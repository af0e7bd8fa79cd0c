"""What ``db import`` and ``db export`` refuse, and what ``--dry-run`` reports,
on an upstream database filled by SQL (with broken rows where a test needs them)."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, create_engine, insert, text
from sqlalchemy.pool import NullPool

from bench import import_data
from placement_api.db.engine import create_engine as create_async_engine
from placement_api.db.models import Base
from placement_api.migration import upstream_schema as up
from tests.migration.conftest import run_db_command
from tests.support import upstream

PROVIDERS, ALLOCATIONS = 6, 9


@contextmanager
def filled_upstream_database(directory: Path) -> Iterator[str]:
    """An upstream database made by upstream's migrations, filled by SQL, on the
    first upstream backend (the move tests cover both)."""
    with upstream.upstream_database(upstream.BACKENDS[0]) as url:
        upstream.db_sync(url, directory)
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as connection:
            import_data.generate(connection, providers=PROVIDERS, allocations=ALLOCATIONS)
        engine.dispose()
        yield url


@pytest.fixture(scope="module")
def source_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A sound source; tests only read it."""
    with filled_upstream_database(tmp_path_factory.mktemp("source")) as url:
        yield url


@pytest.fixture(scope="module")
def broken_source_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A source with rows upstream's loose keys let in and ours cannot take."""
    with filled_upstream_database(tmp_path_factory.mktemp("broken")) as url:
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as connection:
            connection.execute(
                insert(up.allocations).values(
                    resource_provider_id=1,
                    consumer_id=str(uuid.uuid4()),
                    resource_class_id=0,
                    used=1,
                )
            )
            connection.execute(
                insert(up.inventories).values(
                    resource_provider_id=1,
                    resource_class_id=99_999,
                    total=1,
                    reserved=0,
                    min_unit=1,
                    max_unit=1,
                    step_size=1,
                    allocation_ratio=1.0,
                )
            )
        engine.dispose()
        yield url


@pytest.fixture(scope="module")
def overfull_source_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A sound source where one allocation takes more than its inventory holds,
    as claims racing past upstream's capacity check leave it."""
    with filled_upstream_database(tmp_path_factory.mktemp("overfull")) as url:
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE allocations SET used = used + 1000000000 "
                    "WHERE id = (SELECT MIN(id) FROM (SELECT id FROM allocations) AS first)"
                )
            )
            (provider,) = connection.execute(
                text(
                    "SELECT uuid FROM resource_providers WHERE id = (SELECT resource_provider_id "
                    "FROM allocations ORDER BY used DESC LIMIT 1)"
                )
            ).one()
        engine.dispose()
        yield url, provider


def count(database_url: str, table: str) -> int:
    async def query() -> int:
        engine = create_async_engine(database_url)
        try:
            async with engine.connect() as connection:
                return int(
                    (await connection.execute(text(f"SELECT COUNT(*) FROM {table}"))).scalar_one()
                )
        finally:
            await engine.dispose()

    return asyncio.run(query())


def test_dry_run_reports_what_would_move_and_writes_nothing(source_url: str, ours_url: str) -> None:
    result = run_db_command("import", "--source", source_url, "--dry-run", url=ours_url)
    assert result.returncode == 0, result.stderr
    assert re.search(rf"allocations\W+{ALLOCATIONS}\b", result.stderr), result.stderr
    assert count(ours_url, "resource_providers") == 0


def test_dry_run_names_rows_that_cannot_move_with_the_reason(
    broken_source_url: str, ours_url: str
) -> None:
    result = run_db_command("import", "--source", broken_source_url, "--dry-run", url=ours_url)
    assert result.returncode == 1
    assert "no consumer row" in result.stderr
    assert "unknown resource class" in result.stderr
    assert count(ours_url, "resource_providers") == 0


def test_import_refuses_a_source_with_rows_that_cannot_move(
    broken_source_url: str, ours_url: str
) -> None:
    result = run_db_command("import", "--source", broken_source_url, url=ours_url)
    assert result.returncode == 1
    assert "2 rows cannot be moved" in result.stderr
    assert count(ours_url, "resource_providers") == 0
    assert count(ours_url, "allocations") == 0


def test_inventories_over_capacity_are_reported_and_move_as_they_are(
    overfull_source_url: tuple[str, str], ours_url: str
) -> None:
    source, provider = overfull_source_url
    dry_run = run_db_command("import", "--source", source, "--dry-run", url=ours_url)
    assert dry_run.returncode == 0, dry_run.stderr
    assert "1 inventories over capacity" in dry_run.stderr
    assert provider in dry_run.stderr
    moved = run_db_command("import", "--source", source, url=ours_url)
    assert moved.returncode == 0, moved.stderr
    assert "1 inventories over capacity" in moved.stderr
    assert count(ours_url, "allocations") == ALLOCATIONS


def test_import_refuses_a_target_that_is_not_empty(source_url: str, ours_url: str) -> None:
    assert run_db_command("import", "--source", source_url, url=ours_url).returncode == 0
    again = run_db_command("import", "--source", source_url, url=ours_url)
    assert again.returncode == 1
    assert "not empty" in again.stderr
    assert count(ours_url, "resource_providers") == PROVIDERS
    assert count(ours_url, "allocations") == ALLOCATIONS


def test_export_refuses_a_target_that_is_not_empty(source_url: str, ours_url: str) -> None:
    assert run_db_command("import", "--source", source_url, url=ours_url).returncode == 0
    refused = run_db_command("export", "--target", source_url, url=ours_url)
    assert refused.returncode == 1
    assert "not empty" in refused.stderr


def schema_differences(database_url: str) -> list[object]:
    """How the database's schema differs from the models (which match the migrations)."""

    def differences(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async def compare() -> list[object]:
        engine = create_async_engine(database_url)
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(differences)
        finally:
            await engine.dispose()

    return asyncio.run(compare())


def test_import_leaves_the_schema_as_the_migrations_made_it(source_url: str, ours_url: str) -> None:
    assert run_db_command("import", "--source", source_url, url=ours_url).returncode == 0
    assert schema_differences(ours_url) == []
    assert count(ours_url, "allocations") == ALLOCATIONS
