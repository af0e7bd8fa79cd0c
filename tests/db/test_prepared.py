"""``Prepared`` statements on both databases: lists bound as arrays on
PostgreSQL and expanded on SQLite give the same rows, literals keep their
values, ``run_many`` runs every set, and every statement runs in the
session's transaction of the moment (one that commits, then the next)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import cast

import asyncpg
import pytest
from sqlalchemy import Integer, Table, bindparam, event, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import Session

from placement_api.db.engine import create_engine
from placement_api.db.models import Project
from placement_api.db.prepared import Prepared
from placement_api.db.session import unit_of_work
from placement_api.domain.changes import recording_session_factory

_projects = cast(Table, Project.__table__)

_BY_NAMES = Prepared.per_dialect(
    lambda member: (
        select(_projects.c.external_id, _projects.c.id + 1000)
        .where(member(_projects.c.external_id, "names"))
        .order_by(_projects.c.external_id)
    )
)
_ADD = Prepared(insert(_projects).values(external_id=bindparam("name")))
_RENAME = Prepared(
    update(_projects)
    .where(_projects.c.external_id == bindparam("old"))
    .values(external_id=bindparam("new"))
)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    created = create_engine(database_url, pool_size=1)
    try:
        yield created
    finally:
        await created.dispose()


def _names(count: int) -> list[str]:
    prefix = uuid.uuid4().hex[:8]
    return [f"prepared-{prefix}-{index}" for index in range(count)]


async def test_lists_of_any_length_and_literals(engine: AsyncEngine) -> None:
    factory = recording_session_factory(engine)
    names = _names(3)
    async with unit_of_work(factory, write=True) as session:
        await _ADD.run_many(session, [{"name": name} for name in names])
        listed = await session.execute(select(_projects.c.external_id, _projects.c.id))
        ids = {name: ident for name, ident in listed}
        for wanted in ([], names[:1], names, [*names, "absent"]):
            rows = await _BY_NAMES.rows(session, names=wanted)
            found = [name for name in names if name in wanted]
            assert [tuple(row) for row in rows] == [(name, ids[name] + 1000) for name in found]
        await session.rollback()


async def test_run_many_runs_every_set(engine: AsyncEngine) -> None:
    factory = recording_session_factory(engine)
    names = _names(3)
    renamed = [f"{name}-renamed" for name in names]
    async with unit_of_work(factory, write=True) as session:
        await _ADD.run_many(session, [{"name": name} for name in names])
        await _RENAME.run_many(
            session, [{"old": old, "new": new} for old, new in zip(names, renamed, strict=True)]
        )
        assert [row[0] for row in await _BY_NAMES.rows(session, names=names + renamed)] == renamed
        await session.rollback()


async def test_each_transaction_of_a_session_holds_its_own_statements(
    engine: AsyncEngine,
) -> None:
    """After a commit the next statement opens a new transaction: rolling
    that one back undoes it, and only it."""
    factory = recording_session_factory(engine)
    kept, undone = _names(2)
    async with unit_of_work(factory, write=True) as session:
        await _ADD.rows(session, name=kept)
        await session.commit()
        await _ADD.rows(session, name=undone)
        await session.rollback()
    async with unit_of_work(factory, write=False) as session:
        rows = await _BY_NAMES.rows(session, names=[kept, undone])
    assert [row[0] for row in rows] == [kept]


_BACKEND = Prepared(text("SELECT pg_backend_pid()"))
_DIVIDE = Prepared(text("SELECT 1 / :divisor").bindparams(bindparam("divisor", type_=Integer)))


async def test_a_connection_whose_direct_statement_failed_is_not_pooled_again(
    engine: AsyncEngine,
) -> None:
    """After a failure SQLAlchemy never saw, the driver's state may disagree
    with SQLAlchemy's (a BEGIN cut short by a timeout once left asyncpg in a
    transaction that later "commits" committed nothing); the one-connection
    pool must open a new connection rather than hand that one out again."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite statements all go through SQLAlchemy")
    factory = recording_session_factory(engine)
    async with unit_of_work(factory, write=True) as session:
        [(before,)] = await _BACKEND.rows(session)
    with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
        async with unit_of_work(factory, write=True) as session:
            await _DIVIDE.rows(session, divisor=0)
    async with unit_of_work(factory, write=True) as session:
        [(after,)] = await _BACKEND.rows(session)
        [(answer,)] = await _DIVIDE.rows(session, divisor=1)
    assert after != before
    assert answer == 1


_PENDING_CHECK = Prepared(
    text(
        "CREATE TEMPORARY TABLE pending_check (id integer,"
        " UNIQUE (id) DEFERRABLE INITIALLY DEFERRED) ON COMMIT DROP"
    )
)
_TWICE = Prepared(text("INSERT INTO pending_check VALUES (1), (1)"))


async def test_a_write_is_begun_as_it_opens_and_committed_on_its_connection(
    engine: AsyncEngine,
) -> None:
    """The transaction is open before any statement (and known to SQLAlchemy's
    adapter, which would otherwise begin another); the session's
    ``before_commit`` listeners run inside it, just before the COMMIT."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite begins through SQLAlchemy")
    factory = recording_session_factory(engine)
    name = _names(1)[0]
    async with unit_of_work(factory, write=True) as session:
        raw = await (await session.connection()).get_raw_connection()
        assert raw.driver_connection is not None
        assert raw.driver_connection.is_in_transaction()

        def add_at_commit(sync_session: Session) -> None:
            sync_session.execute(insert(_projects).values(external_id=name))

        event.listen(session.sync_session, "before_commit", add_at_commit)
        [(pid,)] = await _BACKEND.rows(session)
    async with unit_of_work(factory, write=False) as session:
        assert [row[0] for row in await _BY_NAMES.rows(session, names=[name])] == [name]
        [(same,)] = await _BACKEND.rows(session)
    assert same == pid


async def test_a_connection_whose_commit_failed_is_not_pooled_again(engine: AsyncEngine) -> None:
    """A COMMIT sent by the unit of work that fails (here a deferred unique
    constraint) is the caller's error, and its connection is replaced."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite commits through SQLAlchemy")
    factory = recording_session_factory(engine)
    backends: list[int] = []

    async def violating() -> None:
        async with unit_of_work(factory, write=True) as session:
            backends.extend(row[0] for row in await _BACKEND.rows(session))
            await _PENDING_CHECK.rows(session)
            await _TWICE.rows(session)

    with pytest.raises(IntegrityError):
        await violating()
    async with unit_of_work(factory, write=True) as session:
        [(after,)] = await _BACKEND.rows(session)
    assert backends
    assert after not in backends
