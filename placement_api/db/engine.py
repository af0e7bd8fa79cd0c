"""Engine construction, with the SQLite settings that make it safe to share.

SQLite gets WAL (readers never block the writer), enforced foreign keys, a
busy timeout, and ``BEGIN IMMEDIATE`` for write transactions: a deferred
transaction that reads and then writes can fail to upgrade its lock when
another writer got there first, while an immediate one queues for the
write lock up front.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import await_

WRITE_OPTION = "placement_write"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def is_sqlite_url(url: str) -> bool:
    return url.startswith("sqlite")


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    if is_sqlite_url(url):
        engine = create_async_engine(url, poolclass=NullPool)
        _configure_sqlite(engine)
        return engine
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=pool_size)
    _ping_on_checkout(engine)
    return engine


def _ping_on_checkout(engine: AsyncEngine) -> None:
    """Try each pooled connection with one round trip before it is used, and
    replace it when the server has gone (a restart, a failover): the pool
    discards a connection whose checkout raises ``DisconnectionError`` and
    takes another. (SQLAlchemy's own pre-ping wraps its ping in BEGIN and
    ROLLBACK, for pgbouncer: three round trips on every request.)"""

    @event.listens_for(engine.sync_engine, "checkout")
    def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        try:
            await_(dbapi_connection.driver_connection.fetchrow(";"))
        except Exception as exc:
            raise DisconnectionError(f"connection lost: {exc}") from exc


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        if connection.get_execution_options().get(WRITE_OPTION):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            connection.exec_driver_sql("BEGIN")
