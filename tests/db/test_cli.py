"""The ``placement-api`` command: schema management and start-up checks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support import databases


def run_cli(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url)
    return subprocess.run(
        [sys.executable, "-m", "placement_api", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
async def empty_pg_url() -> AsyncIterator[str]:
    if "postgresql" not in databases.BACKENDS:
        pytest.skip("PostgreSQL backend not selected")
    name, url = await databases.create_pg_database()
    try:
        yield url
    finally:
        await databases.drop_pg_database(name)


async def test_serve_refuses_an_out_of_date_postgresql_schema(empty_pg_url: str) -> None:
    result = run_cli("serve", "--port", "1", url=empty_pg_url)
    assert result.returncode == 2
    assert "placement-api db upgrade" in result.stderr


async def test_db_upgrade_then_current(empty_pg_url: str) -> None:
    assert "out of date" in run_cli("db", "current", url=empty_pg_url).stdout
    assert run_cli("db", "upgrade", url=empty_pg_url).returncode == 0
    assert "(current)" in run_cli("db", "current", url=empty_pg_url).stdout


def test_db_upgrade_creates_the_sqlite_file_and_its_directory(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "placement.sqlite"
    result = run_cli("db", "upgrade", url=f"sqlite+aiosqlite:///{target}")
    assert result.returncode == 0, result.stderr
    assert target.exists()
