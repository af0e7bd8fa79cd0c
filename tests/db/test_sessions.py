"""The unit of work on PostgreSQL: statements sent to the driver directly run
in a write's transaction, a read runs each statement on its own (no BEGIN
and COMMIT round trips), a commit that ``after_commit`` listeners wait for
goes through the session, and a pooled connection the server dropped is
replaced before a request uses it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.db.driver import fetch_all
from placement_api.db.engine import create_engine
from placement_api.db.session import unit_of_work
from placement_api.domain.changes import recording_session_factory


@pytest.fixture
async def engine(database_url: str, backend: str) -> AsyncIterator[AsyncEngine]:
    if backend != "postgresql":
        pytest.skip("SQLite statements all go through SQLAlchemy, which opens the transaction")
    created = create_engine(database_url, pool_size=1)
    try:
        yield created
    finally:
        await created.dispose()


async def test_direct_statements_share_the_unit_of_work_transaction(engine: AsyncEngine) -> None:
    factory = recording_session_factory(engine)
    current = select(func.txid_current())
    async with unit_of_work(factory, write=True) as session:
        ((first,),) = await fetch_all(session, current)
        # Another statement, so that the driver prepares and sends it anew.
        ((second,),) = await fetch_all(session, select(func.txid_current() + 0))
        raw = await (await session.connection()).get_raw_connection()
        assert raw.driver_connection is not None
        assert raw.driver_connection.is_in_transaction()
    assert first == second
    async with unit_of_work(factory, write=True) as session:
        ((later,),) = await fetch_all(session, current)
        driver = (await (await session.connection()).get_raw_connection()).driver_connection
    assert later != first
    # Committed, and handed back to the pool outside any transaction.
    assert driver is not None
    assert not driver.is_in_transaction()


async def test_a_commit_others_listen_for_goes_through_the_session(engine: AsyncEngine) -> None:
    """A commit sent on the driver would not tell ``after_commit`` listeners."""
    factory = recording_session_factory(engine)
    told: list[object] = []
    async with unit_of_work(factory, write=True) as session:
        ((transaction,),) = await fetch_all(session, select(func.txid_current()))
        event.listen(session.sync_session, "after_commit", told.append)
    assert told == [session.sync_session]
    async with unit_of_work(factory, write=False) as session:
        ((status,),) = await fetch_all(session, select(func.txid_status(transaction)))
    assert status == "committed"


async def test_a_read_sends_no_begin_or_commit(engine: AsyncEngine) -> None:
    """At READ COMMITTED each statement sees its own snapshot inside a
    transaction too, so a read gives up nothing by running without one."""
    factory = recording_session_factory(engine)
    current = select(func.txid_current())
    async with unit_of_work(factory, write=False) as session:
        ((first,),) = await fetch_all(session, current)
        ((second,),) = (await session.execute(select(func.txid_current() + 0))).all()
        driver = (await (await session.connection()).get_raw_connection()).driver_connection
        assert driver is not None
        assert not driver.is_in_transaction()
    assert first != second


async def test_a_connection_the_server_dropped_is_replaced(
    engine: AsyncEngine, database_url: str
) -> None:
    factory = recording_session_factory(engine)
    backend_pid = select(func.pg_backend_pid())
    async with unit_of_work(factory, write=False) as session:
        ((dropped,),) = await fetch_all(session, backend_pid)
        driver = (await (await session.connection()).get_raw_connection()).driver_connection
    assert driver is not None
    closed = asyncio.Event()
    driver.add_termination_listener(lambda _connection: closed.set())
    admin = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", dropped)
    finally:
        await admin.close()
    # Noticed without a round trip, once the event loop reads the closed socket.
    await asyncio.wait_for(closed.wait(), 10)
    async with unit_of_work(factory, write=False) as session:
        ((replacement,),) = await fetch_all(session, backend_pid)
    assert replacement != dropped


@pytest.mark.parametrize("write", [False, True])
async def test_a_unit_of_work_always_hands_its_connection_back(
    engine: AsyncEngine, write: bool
) -> None:
    """Finished, failed or cancelled mid-statement: the pool's one connection
    is back, and usable."""
    factory = recording_session_factory(engine)
    marker = select(func.txid_current())
    async with unit_of_work(factory, write=write) as session:
        await fetch_all(session, marker)
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]

    async def failing() -> None:
        async with unit_of_work(factory, write=write) as session:
            await fetch_all(session, marker)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await failing()
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]

    async def sleeper() -> None:
        async with unit_of_work(factory, write=write) as session:
            await session.execute(select(func.pg_sleep(30)))

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    # A read begins nothing (a write begins as it opens): no transaction is left over.
    async with unit_of_work(factory, write=False) as session:
        driver = (await (await session.connection()).get_raw_connection()).driver_connection
        assert driver is not None
        assert driver.is_in_transaction() is False
    async with unit_of_work(factory, write=write) as session:
        ((one,),) = await fetch_all(session, select(func.abs(-1)))
    assert one == 1
