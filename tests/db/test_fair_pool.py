"""PostgreSQL's connection pool serves waiting requests in arrival order: a
connection returned while requests wait goes to the longest waiter, never
to a request that asks for one later (``placement_api.db.fair_pool``).

It relies on SQLAlchemy's ``QueuePool._queue_class``: the first test fails
if SQLAlchemy stops building the pool's queue from it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from placement_api.db.engine import DatabaseLimits, create_engine
from placement_api.db.fair_pool import FairAsyncPool, FairQueue


@pytest.fixture
async def engine(database_url: str, backend: str) -> AsyncIterator[AsyncEngine]:
    if backend != "postgresql":
        pytest.skip("SQLite opens a connection per request (no pool to wait for)")
    created = create_engine(database_url, pool_size=1, limits=DatabaseLimits(pool_timeout=30))
    try:
        yield created
    finally:
        await created.dispose()


def _queue(engine: AsyncEngine) -> FairQueue[object]:
    queue = engine.sync_engine.pool._pool  # type: ignore[attr-defined]
    assert isinstance(queue, FairQueue)
    return queue


async def _until_waiting(engine: AsyncEngine, count: int) -> None:
    for _ in range(100):
        if len(_queue(engine)._waiters) >= count:
            return
        await asyncio.sleep(0)
    pytest.fail(f"fewer than {count} requests wait for a connection")


async def _take_turn(engine: AsyncEngine, name: str, order: list[str]) -> None:
    async with engine.connect() as connection:
        order.append(name)
        await connection.execute(text("SELECT 1"))


async def test_the_pool_is_built_on_the_fair_queue(engine: AsyncEngine) -> None:
    assert isinstance(engine.sync_engine.pool, FairAsyncPool)
    _queue(engine)


async def test_a_returned_connection_goes_to_the_longest_waiter(engine: AsyncEngine) -> None:
    """The request that returns a connection and at once asks for another (a
    keep-alive client's next request) waits behind those already waiting,
    where an ``asyncio.Queue`` lets it take the connection back."""
    order: list[str] = []
    holder = await engine.connect()
    await holder.execute(text("SELECT 1"))
    first = asyncio.create_task(_take_turn(engine, "first", order))
    await _until_waiting(engine, 1)
    second = asyncio.create_task(_take_turn(engine, "second", order))
    await _until_waiting(engine, 2)
    await holder.close()
    await _take_turn(engine, "holder again", order)
    await asyncio.gather(first, second)
    assert order == ["first", "second", "holder again"]


async def test_a_waiter_cancelled_as_it_is_handed_a_connection_passes_it_on(
    engine: AsyncEngine,
) -> None:
    holder = await engine.connect()
    cancelled = asyncio.create_task(_take_turn(engine, "cancelled", []))
    await _until_waiting(engine, 1)
    order: list[str] = []
    next_in_line = asyncio.create_task(_take_turn(engine, "next", order))
    await _until_waiting(engine, 2)
    await holder.close()  # hands the connection to the first waiter...
    cancelled.cancel()  # ...which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    await next_in_line
    assert order == ["next"]
    assert engine.sync_engine.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_a_waiter_gives_up_after_the_pool_timeout(database_url: str, backend: str) -> None:
    if backend != "postgresql":
        pytest.skip("SQLite opens a connection per request (no pool to wait for)")
    engine = create_engine(database_url, pool_size=1, limits=DatabaseLimits(pool_timeout=0.05))
    try:
        holder: AsyncConnection = await engine.connect()
        with pytest.raises(PoolTimeoutError):
            await engine.connect()
        assert not _queue(engine)._waiters
        await holder.close()
        await _take_turn(engine, "after", [])
    finally:
        await engine.dispose()
