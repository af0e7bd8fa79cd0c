"""Telling a database that is down or too slow from a bug.

Such errors come from several layers (the pool, SQLAlchemy's wrappers, the
drivers, the socket), often one wrapped in another; the request gets a 503
when any error in the chain says the database could not answer in time, or
that it is a standby (read-only) where a write needs the primary: during a
failover, until the new primary is found, or on an API that reaches only a
standby (docs/ha.md).
"""

from __future__ import annotations

import sqlite3
import time

import asyncpg
from sqlalchemy import exc as sa_exc

# Errors that mean "could not reach, or could not wait for, the database".
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    sa_exc.TimeoutError,  # the pool had no connection to give in time
    sa_exc.DisconnectionError,
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    asyncpg.PostgresConnectionError,  # class 08: connection failures
    asyncpg.CannotConnectNowError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    asyncpg.QueryCanceledError,  # statement_timeout, or a cancel request
    asyncpg.LockNotAvailableError,  # lock_timeout
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.TooManyConnectionsError,
    # A connection whose last operation a lost server interrupted refuses
    # the next ("another operation is in progress"); the pool replaces it.
    asyncpg.InternalClientError,
    # A write on a standby, or on a primary being demoted: the primary is elsewhere.
    asyncpg.ReadOnlySQLTransactionError,
    ConnectionError,
    TimeoutError,
)

_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")

UNAVAILABLE_DETAIL = "The database is unavailable or too slow to answer; retry later."


def _chain(error: BaseException) -> list[BaseException]:
    """``error``, what it wraps (``orig``) and what caused it, each once."""
    found: list[BaseException] = []
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or any(current is seen for seen in found):
            continue
        found.append(current)
        orig = getattr(current, "orig", None)
        pending += [
            orig if isinstance(orig, BaseException) else None,
            current.__cause__,
            current.__context__,
        ]
    return found


def is_unavailable(error: BaseException) -> bool:
    """True when ``error`` says the database is unreachable, gone or too slow
    (a timeout, a lost connection, SQLite's write lock not obtained)."""
    chain = _chain(error)
    sqlite_errors = [link for link in chain if isinstance(link, sqlite3.Error)]
    if sqlite_errors:
        # SQLite reports a missing table or a read-only file as an
        # OperationalError too: only a lock not obtained is an outage.
        return any(text in str(link) for link in sqlite_errors for text in _SQLITE_BUSY)
    return any(isinstance(link, _UNAVAILABLE) for link in chain)


def server_cancelled(error: BaseException) -> bool:
    """True when the server itself cancelled a statement (its statement_timeout,
    a cancel request): slow work, from a server that answers."""
    return any(isinstance(link, asyncpg.QueryCanceledError) for link in _chain(error))


# How long a database found read-only is taken to stay so before the
# background loops try to write again (a standby promoted is found within this).
STANDBY_RECHECK = 5.0


def is_read_only(error: BaseException) -> bool:
    """True when ``error`` says the database refused to write because it is a
    standby (in recovery) or read-only."""
    for link in _chain(error):
        if isinstance(link, asyncpg.ReadOnlySQLTransactionError):
            return True
        if isinstance(link, asyncpg.PostgresError) and "recovery" in str(link):
            return True
    return False


class StandbyMemory:
    """Whether the database was last found read-only, for ``STANDBY_RECHECK``
    seconds: background writers skip their turn meanwhile instead of
    failing (and logging) on every try."""

    def __init__(self) -> None:
        self._until = 0.0

    def now(self) -> bool:
        return time.monotonic() < self._until

    def learn(self, error: BaseException) -> bool:
        """Remember ``error`` if it says the database is read-only; whether it did."""
        if not is_read_only(error):
            return False
        self._until = time.monotonic() + STANDBY_RECHECK
        return True
