"""The unit of work: one request, one transaction.

``unit_of_work`` commits when the request's handler returns and rolls back
when it raises, so domain functions never commit. Write requests open their
transaction in write mode (``BEGIN IMMEDIATE`` on SQLite); reads on
PostgreSQL run in autocommit, each statement on its own.

SQLite takes one writer at a time. Within a process, writers queue on an
asyncio lock per engine, in arrival order, without holding a connection
(SQLite's own busy wait polls, and lets a late writer overtake); the busy
timeout then only arbitrates between worker processes. A writer that cannot
have the lock within the lock timeout gets ``sqlalchemy.exc.TimeoutError``,
which the service answers with a 503.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext

from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session
from sqlalchemy.util import greenlet_spawn

from placement_api.db.engine import WRITE_OPTION, WriteQueue, write_queue
from placement_api.observability.metrics import CONNECTION_WAIT_SECONDS

SessionFactory = async_sessionmaker[AsyncSession]


def make_session_factory(engine: AsyncEngine) -> SessionFactory:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


@asynccontextmanager
async def _write_turn(queue: WriteQueue) -> AsyncIterator[None]:
    try:
        async with asyncio.timeout(queue.timeout):
            await queue.lock.acquire()
    except TimeoutError:
        raise PoolTimeoutError(
            f"SQLite: other writes held the database for more than {queue.timeout:g}s"
        ) from None
    try:
        yield
    finally:
        queue.lock.release()


def _turn_for(factory: SessionFactory, write: bool) -> AbstractAsyncContextManager[None]:
    engine = factory.kw.get("bind")
    queue = write_queue(engine) if write and isinstance(engine, AsyncEngine) else None
    return _write_turn(queue) if queue is not None else nullcontext()


@asynccontextmanager
async def unit_of_work(factory: SessionFactory, *, write: bool) -> AsyncIterator[AsyncSession]:
    started = time.perf_counter()
    async with _turn_for(factory, write):
        session = factory()
        options: dict[str, object] = {WRITE_OPTION: write}
        # A PostgreSQL read runs outside a transaction: there is nothing to commit.
        autocommit = not write and factory.kw["bind"].dialect.name == "postgresql"
        if autocommit:
            options["isolation_level"] = "AUTOCOMMIT"
        try:
            await session.connection(execution_options=options)
            CONNECTION_WAIT_SECONDS.observe(time.perf_counter() - started)
            try:
                yield session
            except BaseException:
                await session.rollback()
                raise
            # Committed and closed in one pass into SQLAlchemy's synchronous
            # session (``AsyncSession.commit`` and ``close`` are a greenlet each).
            await greenlet_spawn(_finish, session.sync_session, not autocommit)
        except BaseException:
            # Closed in a task of its own, awaited even if this one is cancelled
            # meanwhile: a connection is never left checked out.
            async with session:
                raise


def _finish(session: Session, commit: bool) -> None:
    if commit:
        session.commit()
    # Its connection is released (committed) or idle (autocommit): closing
    # it waits for nothing.
    session.close()
