"""Engine construction, with the SQLite settings that make it safe to share.

SQLite gets WAL (readers never block the writer), enforced foreign keys, a
busy timeout (the lock timeout setting), and ``BEGIN IMMEDIATE`` for write transactions: a deferred
transaction that reads and then writes can fail to upgrade its lock when
another writer got there first, while an immediate one queues for the
write lock up front.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import await_

from placement_api.db.fair_pool import FairAsyncPool
from placement_api.db.urls import async_url

if TYPE_CHECKING:
    from placement_api.settings import Settings

WRITE_OPTION = "placement_write"
# A pooled connection idle this long is pinged before use (see _ping_on_checkout).
PING_AFTER_IDLE = 1.0
_CHECKED_IN_AT = "placement_checked_in_at"
# A client-side wait a little past the server's statement_timeout, so that
# PostgreSQL cancels a slow statement itself (the connection stays usable)
# and the client gives up only on a server that does not answer at all.
CLIENT_TIMEOUT_MARGIN = 2.0


@dataclass(frozen=True)
class WriteQueue:
    """SQLite's writers in one process, queued in arrival order (see
    ``placement_api.db.session``), and how long one may wait."""

    lock: asyncio.Lock
    timeout: float


_WRITE_QUEUES: weakref.WeakKeyDictionary[Engine, WriteQueue] = weakref.WeakKeyDictionary()


def write_queue(engine: AsyncEngine) -> WriteQueue | None:
    """The engine's write queue: SQLite engines have one, PostgreSQL's none."""
    return _WRITE_QUEUES.get(engine.sync_engine)


@dataclass(frozen=True)
class DatabaseLimits:
    """How long the database may take: see the ``database_*`` settings (the
    service's come from them; tools that migrate, import or audit a whole
    database keep these longer defaults)."""

    statement_timeout: float = 30.0
    lock_timeout: float = 10.0
    connect_timeout: float = 5.0
    pool_timeout: float = 10.0
    # A pooled connection idle this long is pinged (within connect_timeout) before use.
    ping_after_idle: float = PING_AFTER_IDLE

    @classmethod
    def of(cls, settings: Settings) -> DatabaseLimits:
        return cls(
            statement_timeout=settings.database_statement_timeout,
            lock_timeout=settings.database_lock_timeout,
            connect_timeout=settings.database_connect_timeout,
            pool_timeout=settings.database_pool_timeout,
        )


def is_sqlite_url(url: str) -> bool:
    return url.startswith("sqlite")


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    max_overflow: int = 0,
    limits: DatabaseLimits | None = None,
) -> AsyncEngine:
    limits = limits or DatabaseLimits()
    parsed = async_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_async_engine(
            parsed, poolclass=NullPool, connect_args={"timeout": limits.lock_timeout}
        )
        _configure_sqlite(engine, limits)
        _WRITE_QUEUES[engine.sync_engine] = WriteQueue(asyncio.Lock(), limits.lock_timeout)
        return engine
    # A fixed set of connections kept open (max_overflow 0 by default):
    # requests past it wait for one, in arrival order, instead of each
    # opening and closing a PostgreSQL session, which costs more than the request.
    engine = create_async_engine(
        parsed,
        poolclass=FairAsyncPool,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=limits.pool_timeout,
        connect_args={
            "timeout": limits.connect_timeout,
            "command_timeout": limits.statement_timeout + CLIENT_TIMEOUT_MARGIN,
            "server_settings": {
                "statement_timeout": str(round(limits.statement_timeout * 1000)),
                "lock_timeout": str(round(limits.lock_timeout * 1000)),
            },
        },
    )
    _ping_on_checkout(engine, limits.connect_timeout, limits.ping_after_idle)
    return engine


def engine_for(settings: Settings, *, url: str | None = None) -> AsyncEngine:
    """The engine the service runs on, with every limit its settings give."""
    return create_engine(
        url or settings.database_url,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        limits=DatabaseLimits.of(settings),
    )


def standby_engine_for(settings: Settings, url: str) -> AsyncEngine:
    """The engine of the standby reads go to: its connections open, and answer
    a ping before every use, within ``database_read_timeout``. A frozen standby
    (its port accepting, nothing answering) is found at checkout, where the read
    can still go to the primary, not halfway through the read (``db.replica``)."""
    limits = replace(
        DatabaseLimits.of(settings),
        connect_timeout=settings.database_read_timeout,
        ping_after_idle=0.0,
    )
    return create_engine(
        url,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        limits=limits,
    )


def _ping_on_checkout(engine: AsyncEngine, timeout: float, after_idle: float) -> None:
    """Make sure a pooled connection still works before a request uses it,
    and replace it when the server has gone (a restart, a failover): the
    pool discards a connection whose checkout raises ``DisconnectionError``
    and takes another.

    A connection the server closed is known closed without asking: asyncpg
    marks it as soon as the event loop reads the end of its socket. Only a
    connection left idle for ``after_idle`` seconds (``PING_AFTER_IDLE``),
    long enough for a firewall or a frozen server to have lost it silently,
    is tried with one round trip (answered within ``timeout``, else it counts
    as gone).
    SQLAlchemy's own pre-ping wraps its ping in BEGIN and ROLLBACK, for
    pgbouncer: three round trips on every request; pinging every checkout
    cost a busy API a third of the CPU of a read.
    """

    @event.listens_for(engine.sync_engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_CHECKED_IN_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _ping(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        driver = dbapi_connection.driver_connection
        if driver.is_closed():
            raise DisconnectionError("connection closed by the server")
        idle = time.monotonic() - record.info.get(_CHECKED_IN_AT, -after_idle)
        if idle < after_idle:
            return
        try:
            await_(driver.fetchrow(";", timeout=timeout))
        except BaseException as exc:
            # Dropped here and now: the pool's own close of a connection it
            # discards first waits up to 2 s for a server that may be frozen.
            driver.terminate()
            if isinstance(exc, Exception):
                raise DisconnectionError(f"connection lost: {exc}") from exc
            raise


def _configure_sqlite(engine: AsyncEngine, limits: DatabaseLimits) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # First: switching to WAL takes a lock, which may have to wait.
        cursor.execute(f"PRAGMA busy_timeout={round(limits.lock_timeout * 1000)}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        if connection.get_execution_options().get(WRITE_OPTION):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            connection.exec_driver_sql("BEGIN")
