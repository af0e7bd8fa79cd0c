"""What the fast paths take from libraries' private parts: the start-up
checks (``db.capabilities``, ``serving.capabilities``,
``web.fastpath.capabilities``, ``auth.fastpath.decision_memory.decision_memory_gaps``) find
nothing changed in the locked versions, and those versions are installed.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlalchemy import Integer, bindparam, column, select, table
from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg
from sqlalchemy.sql.compiler import SQLCompiler

from placement_api.auth.fastpath.decision_memory import decision_memory_gaps
from placement_api.db.capabilities import direct_driver_gaps
from placement_api.db.driver import positional_sql
from placement_api.serving.capabilities import protocol_gaps, supervisor_gaps
from placement_api.web.fastpath.capabilities import dispatch_gaps, route_plan_gaps

LOCK_FILE = Path(__file__).resolve().parents[2] / "requirements.lock"
RELIED_ON = (
    "SQLAlchemy",
    "asyncpg",
    "uvicorn",
    "httptools",
    "oslo.policy",
    "fastapi",
    "starlette",
)


def _locked_versions() -> dict[str, str]:
    pins = {}
    for line in LOCK_FILE.read_text().splitlines():
        name, separator, version = line.partition("==")
        if separator:
            pins[name.strip().lower()] = version.strip()
    return pins


@pytest.mark.parametrize("library", RELIED_ON)
def test_installed_versions_are_the_locked_ones(library: str) -> None:
    locked = _locked_versions().get(library.lower())
    installed = metadata.version(library)
    assert locked == installed, (
        f"{library} {installed} is installed but requirements.lock pins {locked}: this test "
        "module checks what the fast paths use of it; run it, then update the lock."
    )


def test_sqlalchemy_gives_what_the_direct_driver_relies_on() -> None:
    assert direct_driver_gaps() == []


def test_oslo_policy_check_trees_are_as_the_decision_memory_walks_them() -> None:
    assert decision_memory_gaps() == []


def test_positional_sql_puts_each_statements_own_values_in_place() -> None:
    """Behaviour, through the function that relies on it: a statement compiled
    once and reused for another with other values gets those values."""
    dialect = sa_asyncpg.dialect()  # type: ignore[no-untyped-call]
    things = table("things", column("id", Integer), column("size", Integer))
    statement = select(things.c.id).where(things.c.size == 5, things.c.id == bindparam("wanted"))
    kept: dict[object, SQLCompiler] = {}
    sql, arguments = positional_sql(statement, dialect, {"wanted": 1}, kept)
    assert "$1" in sql
    assert arguments == [5, 1]
    other = select(things.c.id).where(things.c.size == 9, things.c.id == bindparam("wanted"))
    assert positional_sql(other, dialect, {"wanted": 2}, kept) == (sql, [9, 2])
    assert len(kept) == 1


def test_uvicorn_httptools_protocol_is_as_the_subclass_expects() -> None:
    assert protocol_gaps() == []


def test_uvicorn_supervisor_is_as_ours_expects() -> None:
    assert supervisor_gaps() == []


def test_fastapi_and_starlette_give_what_the_fast_path_relies_on() -> None:
    assert route_plan_gaps() == []
    assert dispatch_gaps(FastAPI()) == []
