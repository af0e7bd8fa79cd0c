"""Statements of the hot paths: built once, compiled once per dialect, run
without the ORM.

The reads every client repeats on every pass (a provider's inventories, a
consumer's allocations, a provider tree) and the statements of an
allocation write are one statement each. Through ``session.execute`` each
costs more Python than PostgreSQL spends on it: the ORM's execution
context, a cache key built from the statement's structure, ``Row`` objects.
A ``Prepared`` statement keeps its SQL per dialect and, on PostgreSQL,
sends it straight to asyncpg (which keeps it prepared on each connection),
inside the session's transaction when it has one. Other databases run it
through SQLAlchemy, with the same semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, cast

from sqlalchemy import ClauseElement, ColumnElement, Executable, any_, bindparam, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import await_, greenlet_spawn

Column = ColumnElement[Any] | InstrumentedAttribute[Any]
# How a statement says "column is one of the list bound as ``name``".
Membership = Callable[[Column, str], ColumnElement[bool]]


def in_expanding(column: Column, name: str) -> ColumnElement[bool]:
    """``column IN (...)``: SQLAlchemy expands the list on every run."""
    return column.in_(bindparam(name, expanding=True))


def equals_any(column: Column, name: str) -> ColumnElement[bool]:
    """``column = ANY($n)`` with the list as one array: the SQL is the same
    for every length, so the driver keeps it prepared (PostgreSQL only).

    The array is read through a sub-select, so the planner never sees its
    values: PostgreSQL then keeps one generic plan for the statement (as
    good for any length: it plans for an array of unknown size) instead of
    planning it again on every run, which cost these short statements more
    than running them (docs/performance.md, "Claims")."""
    array = ARRAY(column.type)
    return column == any_(sql_cast(select(bindparam(name, type_=array)).scalar_subquery(), array))


class Prepared:
    """A statement with named ``bindparam``s, given values by name when run.

    ``postgresql`` replaces ``statement`` there (the same statement with
    arrays for lists, see ``per_dialect``). The compiled SQL is kept by the
    object itself: it is built at import with its statement and lives as
    long as the process.
    """

    def __init__(self, statement: Executable, *, postgresql: Executable | None = None) -> None:
        self.statement = statement
        self._postgresql = statement if postgresql is None else postgresql
        # dialect name -> (SQL, parameter names in order, values the statement carries)
        self._compiled: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {}

    @classmethod
    def per_dialect(cls, build: Callable[[Membership], Executable]) -> Prepared:
        """The statement ``build`` makes, with list memberships expanded
        (SQLite) or as arrays (PostgreSQL)."""
        return cls(build(in_expanding), postgresql=build(equals_any))

    async def rows(self, session: AsyncSession, **values: Any) -> Sequence[Sequence[Any]]:
        """The result rows, as tuples in the statement's column order
        (none for a statement that returns none)."""
        direct = await _driver(session)
        if direct is None:
            result = await (await session.connection()).execute(self.statement, values)
            rows: Sequence[Sequence[Any]] = result.all() if result.returns_rows else []
            return rows
        driver, connection = direct
        text, names, carried = self._sql(session)
        given = carried | values
        with _invalidated_on_failure(connection):
            records: Sequence[Sequence[Any]] = await driver.fetch(
                text, *(given[name] for name in names)
            )
        return records

    async def run_many(self, session: AsyncSession, values: Sequence[Mapping[str, Any]]) -> None:
        """Run the statement once per set of values, in one round trip on
        PostgreSQL (the driver pipelines them); nothing is returned."""
        if not values:
            return
        direct = await _driver(session)
        if direct is None:
            await (await session.connection()).execute(self.statement, list(values))
            return
        driver, connection = direct
        text, names, carried = self._sql(session)
        with _invalidated_on_failure(connection):
            await driver.executemany(
                text, [tuple({**carried, **each}[name] for name in names) for each in values]
            )

    def _sql(self, session: AsyncSession) -> tuple[str, tuple[str, ...], dict[str, Any]]:
        dialect = session.get_bind().dialect
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            # Every statement given is a ClauseElement, and compiles to SQL.
            element = cast(ClauseElement, self._postgresql)
            sql = cast(SQLCompiler, element.compile(dialect=dialect))
            names = tuple(sql.positiontup or ())
            # Literals (``generation + 1``) are parameters too, with their value.
            carried = {
                name: sql.binds[name].value for name in names if sql.binds[name].value is not None
            }
            compiled = (sql.string, names, carried)
            self._compiled[dialect.name] = compiled
        return compiled


# session.info key: (the session's transaction, its asyncpg connection, the
# SQLAlchemy connection over it).
_DRIVER = "placement.prepared.driver"


async def _driver(session: AsyncSession) -> tuple[Any, Connection] | None:
    """The asyncpg connection of the session's transaction (opened if it is
    not yet) and the SQLAlchemy connection over it; None on other databases.
    Kept for the transaction (``open_on_driver`` keeps it from the start), as
    asking the session for its connection costs more than a statement sent."""
    transaction = session.sync_session.get_transaction()
    cached = session.info.get(_DRIVER)
    if cached is not None and transaction is not None and cached[0] is transaction:
        return cached[1], cached[2]
    if session.get_bind().dialect.name != "postgresql":
        return None
    return await greenlet_spawn(open_on_driver, session.sync_session)


def open_on_driver(
    session: Session, execution_options: Mapping[str, Any] | None = None
) -> tuple[Any, Connection]:
    """Check out the session's connection, begin its transaction on the
    driver (nothing is sent in autocommit) and keep the asyncpg connection
    for the statements and the commit (PostgreSQL). Run in a greenlet: one
    ``greenlet_spawn`` for what ``session.connection()``, ``_driver`` and the
    BEGIN took three for. Returns what ``_driver`` does."""
    connection = session.connection(execution_options=execution_options)
    adapted = connection.connection.dbapi_connection
    with _invalidated_on_failure(connection):
        await_(begin_transaction(adapted))
    driver = adapted.driver_connection  # type: ignore[union-attr]
    session.info[_DRIVER] = (session.get_transaction(), driver, connection)
    return driver, connection


def commit_on_driver(session: Session) -> bool:
    """Commit the transaction ``open_on_driver`` began on its connection, as
    ``Session.commit`` would (pending ORM rows flushed, then the session's
    ``before_commit`` listeners, the change feed's append among them) without
    the session's own transaction bookkeeping; the session's close then
    releases the connection with nothing left to send. Run in a greenlet.
    False, having done nothing, when the session's transaction is no longer
    that one (committed or rolled back meanwhile), or when anything listens
    for ``after_commit``, which this commit would not tell: the caller
    commits through the session.

    A COMMIT or feed append that fails or is cancelled closes the connection:
    its state is unknown (see ``discarded_on_failure``)."""
    cached = session.info.get(_DRIVER)
    if cached is None or cached[0] is not session.get_transaction():
        return False
    if session.dispatch.after_commit:
        return False
    connection: Connection = cached[2]
    session.flush()
    with _invalidated_on_failure(connection):
        session.dispatch.before_commit(session)
        connection.commit()
    return True


async def driver_in_transaction(connection: AsyncConnection) -> Any:
    """The asyncpg connection under ``connection``, inside its transaction
    (begun now if it was not yet; none in autocommit)."""
    raw = await connection.get_raw_connection()
    with discarded_on_failure(connection):
        await begin_transaction(raw.dbapi_connection)
    driver = raw.driver_connection
    assert driver is not None
    return driver


@contextmanager
def discarded_on_failure(connection: AsyncConnection) -> Iterator[None]:
    """Close, never pool again, a connection whose direct statement failed.

    SQLAlchemy invalidates a connection it can no longer trust when its own
    statements fail; statements sent to the driver bypass that. A BEGIN cut
    short (a timeout, a cancelled request) leaves asyncpg holding a
    transaction SQLAlchemy never recorded: the next request on the
    connection would get a savepoint inside it, and its COMMIT would commit
    nothing. A cancelled statement leaves the protocol mid-exchange.
    """
    with _invalidated_on_failure(connection.sync_connection):
        yield


@contextmanager
def _invalidated_on_failure(connection: Connection | None) -> Iterator[None]:
    """``discarded_on_failure`` on the synchronous connection."""
    try:
        yield
    except BaseException:
        if connection is not None:
            with suppress(Exception):
                connection.invalidate()
        raise


async def begin_transaction(adapted: Any) -> None:
    """Open the session's transaction if it is not open yet. SQLAlchemy's
    asyncpg adapter sends BEGIN just before the first statement it runs
    itself; statements sent to the driver directly would otherwise each run
    in a transaction of their own. In autocommit (reads) nothing is sent."""
    if adapted._transaction is None and not adapted.autocommit:
        await adapted._start_transaction()
