"""Which errors mean "the database is down or too slow" (a 503) and which are
bugs or bad input: the classification sees through SQLAlchemy's wrappers."""

from __future__ import annotations

import sqlite3

import asyncpg
import pytest
from sqlalchemy import exc as sa_exc

from placement_api.db.outage import is_read_only, is_unavailable


def _wrapped(error: Exception, wrapper: type[sa_exc.DBAPIError] = sa_exc.DBAPIError) -> Exception:
    """As SQLAlchemy raises a driver's error: the adapter's error in ``orig``,
    caused by the driver's own."""
    adapted = Exception(str(error))
    adapted.__cause__ = error
    return wrapper("SELECT 1", {}, adapted)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(sqlite3.OperationalError("database is locked"), sa_exc.OperationalError),
        _wrapped(asyncpg.QueryCanceledError("canceling statement due to statement timeout")),
        _wrapped(asyncpg.LockNotAvailableError("canceling statement due to lock timeout")),
        _wrapped(asyncpg.CannotConnectNowError("the database system is starting up")),
        _wrapped(asyncpg.AdminShutdownError("terminating connection")),
        _wrapped(asyncpg.ConnectionDoesNotExistError("connection was closed")),
        # A standby (or a demoted primary): the write needs the primary, found again soon.
        _wrapped(
            asyncpg.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"),
            sa_exc.InternalError,
        ),
        _wrapped(
            asyncpg.exceptions.TargetServerAttributeNotMatched("none of the hosts is read-write")
        ),
        sa_exc.TimeoutError("QueuePool limit reached, connection timed out"),
        ConnectionRefusedError(111, "Connection refused"),
        TimeoutError(),
    ],
    ids=lambda error: type(error).__name__ + ":" + str(error)[:30],
)
def test_an_unreachable_or_slow_database_is_recognised(error: Exception) -> None:
    assert is_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(sqlite3.OperationalError("no such table: inventories"), sa_exc.OperationalError),
        _wrapped(sqlite3.IntegrityError("UNIQUE constraint failed"), sa_exc.IntegrityError),
        _wrapped(asyncpg.UniqueViolationError("duplicate key"), sa_exc.IntegrityError),
        _wrapped(asyncpg.CharacterNotInRepertoireError("invalid byte sequence")),
        ValueError("a bug"),
    ],
    ids=lambda error: type(error).__name__ + ":" + str(error)[:30],
)
def test_bugs_and_bad_input_are_not_an_outage(error: Exception) -> None:
    assert not is_unavailable(error)


def test_only_a_refused_write_says_the_database_is_read_only() -> None:
    refused = asyncpg.ReadOnlySQLTransactionError(
        "cannot execute nextval() in a read-only transaction"
    )
    assert is_read_only(_wrapped(refused, sa_exc.InternalError))
    assert is_read_only(
        _wrapped(asyncpg.FeatureNotSupportedError("cannot execute LISTEN during recovery"))
    )
    assert not is_read_only(_wrapped(asyncpg.UniqueViolationError("duplicate key")))
    assert not is_read_only(ConnectionRefusedError(111, "Connection refused"))
