"""The unit of work: one request, one transaction, committed when the
handler returns and rolled back when it raises, so domain functions never
commit. How it begins and commits on PostgreSQL and queues writers on
SQLite: docs/architecture.md, The API: layers and modules.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import ClassVar

from sqlalchemy import event
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session
from sqlalchemy.util import greenlet_spawn

from placement_api.db.driver import (
    DIRECT,
    commit_on_driver,
    open_on_driver,
    position_after_commit,
)
from placement_api.db.engine import WRITE_OPTION, WriteQueue, write_queue
from placement_api.db.second_connection import SecondConnection

SessionFactory = async_sessionmaker[AsyncSession]


WaitObserver = Callable[[float], None]


class PlacementSession(Session):
    """The sessions of one factory: its ``before_commit`` listeners are
    installed on a subclass of this, never on every SQLAlchemy session."""

    # Told how long each unit of work waited for its connection (a metric).
    connection_wait_observer: ClassVar[WaitObserver | None] = None


def make_session_factory(
    engine: AsyncEngine,
    *,
    before_commit: Callable[[Session], None] | None = None,
    on_connection_wait: WaitObserver | None = None,
) -> SessionFactory:
    session_class = type(
        "PlacementSession", (PlacementSession,), {"connection_wait_observer": on_connection_wait}
    )
    if before_commit is not None:
        event.listen(session_class, "before_commit", before_commit)
    return async_sessionmaker(
        engine, expire_on_commit=False, autoflush=False, sync_session_class=session_class
    )


async def _take_turn(queue: WriteQueue) -> None:
    try:
        async with asyncio.timeout(queue.timeout):
            await queue.lock.acquire()
    except TimeoutError:
        raise PoolTimeoutError(
            f"SQLite: other writes held the database for more than {queue.timeout:g}s"
        ) from None


class UnitOfWork(AbstractAsyncContextManager[AsyncSession]):
    """One transaction's session (see the module's docstring), entered with
    ``async with``. A class rather than a generator-based context manager:
    it is entered on every request."""

    __slots__ = (
        "_autocommit",
        "_committed",
        "_factory",
        "_observe_wait",
        "_on_driver",
        "_position",
        "_queue",
        "_second",
        "_session",
        "_write",
        "written",
    )

    def __init__(
        self,
        factory: SessionFactory,
        *,
        write: bool,
        committed: Callable[[AsyncSession], None] | None = None,
        position: bool = False,
    ) -> None:
        self._factory = factory
        self._write = write
        # Called once the transaction is committed (not after a rollback).
        self._committed = committed
        engine = factory.kw["bind"]
        self._observe_wait = factory.kw["sync_session_class"].connection_wait_observer
        self._queue = write_queue(engine) if write and isinstance(engine, AsyncEngine) else None
        # A PostgreSQL read runs outside a transaction: there is nothing to commit.
        postgresql = engine.dialect.name == "postgresql"
        self._autocommit = not write and postgresql
        # Begun and committed on asyncpg directly, unless start-up found it unusable.
        self._on_driver = postgresql and DIRECT.usable
        self._second: SecondConnection | None = None
        # ``position``: read the primary's WAL position once committed, on the
        # transaction's own connection (``written``; None when it was not read
        # there: not on the driver, or the read failed).
        self._position = position and self._on_driver
        self.written: str | None = None

    async def __aenter__(self) -> AsyncSession:
        started = time.perf_counter()
        if self._queue is not None:
            await _take_turn(self._queue)
        try:
            session = self._session = self._factory()
            options: dict[str, object] = {WRITE_OPTION: self._write}
            if self._autocommit:
                options["isolation_level"] = "AUTOCOMMIT"
            try:
                if self._on_driver:
                    await greenlet_spawn(open_on_driver, session.sync_session, options)
                else:
                    await session.connection(execution_options=options)
            except BaseException:
                # Closed in a task of its own, awaited even if this one is cancelled
                # meanwhile: a connection is never left checked out.
                async with session:
                    raise
        except BaseException:
            self._end_turn()
            raise
        if self._observe_wait is not None:
            self._observe_wait(time.perf_counter() - started)
        return session

    def second_connection(self) -> SecondConnection | None:
        """For a read on PostgreSQL, a second connection to read beside this
        one's (taken only if the pool can spare it); None elsewhere."""
        if self._second is None and self._autocommit:
            self._second = SecondConnection(self._factory.kw["bind"])
        return self._second

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        session = self._session
        try:
            if self._second is not None:
                await self._second.close()
            if exc_type is None:
                # Committed and closed in one pass into SQLAlchemy's synchronous
                # session (``AsyncSession.commit`` and ``close`` are a greenlet each),
                # on PostgreSQL by the driver (``driver.commit_on_driver``).
                self.written = await greenlet_spawn(
                    _finish,
                    session.sync_session,
                    not self._autocommit,
                    self._on_driver,
                    self._position,
                )
            else:
                await session.rollback()
                await session.__aexit__(exc_type, exc, traceback)
        except BaseException:
            # Closed in a task of its own, awaited even if this one is cancelled
            # meanwhile: a connection is never left checked out.
            async with session:
                raise
        finally:
            self._end_turn()
        if exc_type is None and self._committed is not None:
            self._committed(session)

    def _end_turn(self) -> None:
        if self._queue is not None:
            self._queue.lock.release()


def unit_of_work(factory: SessionFactory, *, write: bool) -> UnitOfWork:
    return UnitOfWork(factory, write=write)


def _finish(session: Session, commit: bool, on_driver: bool, position: bool) -> str | None:
    written = None
    if commit:
        if on_driver and commit_on_driver(session):
            if position:
                written = position_after_commit(session)
        else:
            session.commit()
    # Its connection is released (committed) or idle (autocommit): closing
    # it waits for nothing.
    session.close()
    return written
