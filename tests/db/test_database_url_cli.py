"""The URLs operators already have, through the ``placement-api`` command: a plain
``postgresql://`` or ``postgres://`` URL works, MySQL is refused in one line, and an
unreachable database of ``db import``/``db export`` is one line, not a traceback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.db.test_cli import run_cli
from tests.support import databases
from tests.support.server import free_port


@pytest.fixture
async def plain_pg_url() -> AsyncIterator[str]:
    if "postgresql" not in databases.BACKENDS:
        pytest.skip("PostgreSQL backend not selected")
    name, url = await databases.create_pg_database()
    try:
        yield url.replace("postgresql+asyncpg://", "postgres://", 1)
    finally:
        await databases.drop_pg_database(name)


async def test_a_postgres_url_without_a_driver_is_migrated_and_read(plain_pg_url: str) -> None:
    upgraded = run_cli("db", "upgrade", url=plain_pg_url)
    assert upgraded.returncode == 0, upgraded.stderr
    current = run_cli("db", "current", url=plain_pg_url)
    assert current.returncode == 0, current.stderr
    assert "(current)" in current.stdout


def test_a_mysql_url_says_it_is_an_import_source_only() -> None:
    result = run_cli("db", "current", url="mysql+pymysql://root:secret@127.0.0.1/placement")
    assert result.returncode == 2
    assert "import source" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [["db", "import", "--source"], ["db", "export", "--target"]])
def test_an_unreachable_other_database_is_one_line_naming_it_masked(command: list[str]) -> None:
    other = f"postgresql://someone:secret@127.0.0.1:{free_port()}/upstream"
    with databases.sqlite_database() as ours:
        result = run_cli(*command, other, url=ours)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if "127.0.0.1" in line]
    assert len(lines) == 1, result.stderr
    assert "someone:***@127.0.0.1" in lines[0]
    assert "secret" not in result.stderr
