"""The one path that sends statements straight to asyncpg, past SQLAlchemy.

A statement is compiled once to positional SQL and run on the asyncpg
connection under the session's own, inside its transaction: for the hot
paths the ORM's per-statement work costs more than PostgreSQL does. It
relies on SQLAlchemy's asyncpg adapter state and statement cache keys,
checked at start-up (``db.capabilities``); when they changed, ``usable``
is off and every statement goes through SQLAlchemy with the same semantics.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, TypeVarTuple, cast

from sqlalchemy import (
    ClauseElement,
    ColumnElement,
    CompoundSelect,
    Dialect,
    Integer,
    Row,
    Select,
    String,
    any_,
    bindparam,
    select,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import await_, greenlet_spawn

from placement_api.db.engine_caches import caches_of

Column = ColumnElement[Any] | InstrumentedAttribute[Any]
Ts = TypeVarTuple("Ts")
AnySelect = Select[*tuple[Any, ...]] | CompoundSelect[*tuple[Any, ...]]
# Where statements run: the request's session, or a connection of its own.
Source = AsyncSession | AsyncConnection
# SQL with positional parameters, their names in order, and the values the
# statement carries itself (literals such as ``generation + 1``).
Positional = tuple[str, tuple[str, ...], dict[str, Any]]


@dataclass
class DirectDriver:
    """Whether statements may go to asyncpg directly: set once at start-up."""

    usable: bool = True


DIRECT = DirectDriver()


def in_bound_list(
    column: Column,
    name: str,
    dialect: str,
    element_type: type[Integer] | type[String] | None = None,
    *,
    values: Sequence[Any] | None = None,
    planned_once: bool = False,
) -> ColumnElement[bool]:
    """``column IN`` the list bound as ``name`` (given now as ``values``, or
    when the statement runs). On PostgreSQL one array parameter, so one
    prepared statement serves lists of any length; elsewhere a list expanded
    into parameters. ``planned_once`` reads the array through a sub-select
    the planner cannot see into, so PostgreSQL keeps one generic plan instead
    of planning short statements again on every run (docs/performance.md,
    "Claims")."""
    unique = values is not None
    listed = None if values is None else list(values)
    if dialect != "postgresql":
        return column.in_(bindparam(name, listed, expanding=True, unique=unique))
    array = ARRAY(column.type if element_type is None else element_type)
    parameter = bindparam(name, listed, type_=array, unique=unique)
    if planned_once:
        return column == any_(sql_cast(select(parameter).scalar_subquery(), array))
    return column == any_(parameter)


def compile_positional(statement: ClauseElement, dialect: Dialect) -> Positional:
    """The statement's SQL for the driver, as ``Positional``."""
    sql = cast(SQLCompiler, statement.compile(dialect=dialect))
    names = tuple(sql.positiontup or ())
    carried = {name: sql.binds[name].value for name in names if sql.binds[name].value is not None}
    return sql.string, names, carried


async def fetch_all(
    source: Source,
    statement: Select[*Ts] | CompoundSelect[*Ts],
    parameters: Mapping[str, Any] | None = None,
) -> Sequence[Row[*Ts]]:
    """Run a Core statement without the ORM's result processing; ``parameters``
    give values to ``bindparam``s the statement names. On PostgreSQL asyncpg's
    records, which unpack like rows, are returned: building ``Row`` objects
    for thousands of rows costs more than the query itself."""
    connection = await source.connection() if isinstance(source, AsyncSession) else source
    if connection.dialect.name != "postgresql" or not DIRECT.usable:
        return (await connection.execute(statement, parameters)).all()
    kept = caches_of(connection.sync_engine).compiled
    sql, arguments = positional_sql(statement, connection.dialect, parameters, kept)
    driver = await driver_in_transaction(connection)
    with discarded_on_failure(connection):
        return cast("Sequence[Row[*Ts]]", await driver.fetch(sql, *arguments))


def positional_sql(
    statement: AnySelect,
    dialect: Dialect,
    parameters: Mapping[str, Any] | None,
    kept: MutableMapping[object, SQLCompiler],
) -> tuple[str, list[Any]]:
    """The statement's SQL, lists expanded, and its arguments in order.

    The compiled form is kept in ``kept`` (the engine's) by the statement's cache key (the
    structure SQLAlchemy's own statement cache uses, which serves only the
    statements it executes itself); the key carries this statement's bound
    values, put in place of those compiled with.
    """
    key = statement._generate_cache_key()
    if key is None:
        compiled: SQLCompiler = statement.compile(dialect=dialect)
        values = compiled.construct_params(parameters, escape_names=False)
    else:
        cached = kept.get(key.key)
        if cached is None:
            cached = kept[key.key] = statement.compile(dialect=dialect, cache_key=key)
        compiled = cached
        values = compiled.construct_params(
            parameters, extracted_parameters=key.bindparams, escape_names=False
        )
    state = compiled.construct_expanded_state(values, escape_names=False)
    return state.statement, [state.parameters[name] for name in state.positiontup or ()]


# session.info key: (the session's transaction, its asyncpg connection, the
# SQLAlchemy connection over it).
_DRIVER = "placement.prepared.driver"


async def session_driver(session: AsyncSession) -> tuple[Any, Connection] | None:
    """The asyncpg connection of the session's transaction (opened if it is
    not yet) and the SQLAlchemy connection over it; None on other databases
    or when the direct path is not usable. Kept for the transaction
    (``open_on_driver`` keeps it from the start), as asking the session for
    its connection costs more than a statement sent."""
    transaction = session.sync_session.get_transaction()
    cached = session.info.get(_DRIVER)
    if cached is not None and transaction is not None and cached[0] is transaction:
        return cached[1], cached[2]
    if session.get_bind().dialect.name != "postgresql" or not DIRECT.usable:
        return None
    return await greenlet_spawn(open_on_driver, session.sync_session)


async def fetch(direct: tuple[Any, Connection], sql: str, arguments: Sequence[Any]) -> Any:
    """Rows of ``sql`` run on ``session_driver``'s connection."""
    driver, connection = direct
    with _invalidated_on_failure(connection):
        return await driver.fetch(sql, *arguments)


async def run_many(
    direct: tuple[Any, Connection], sql: str, arguments: Sequence[Sequence[Any]]
) -> None:
    """``sql`` run once per set of arguments, pipelined in one round trip."""
    driver, connection = direct
    with _invalidated_on_failure(connection):
        await driver.executemany(sql, arguments)


def open_on_driver(
    session: Session, execution_options: Mapping[str, Any] | None = None
) -> tuple[Any, Connection]:
    """Check out the session's connection, begin its transaction on the
    driver (nothing is sent in autocommit) and keep the asyncpg connection
    for the statements and the commit (PostgreSQL). Run in a greenlet: one
    ``greenlet_spawn`` for what ``session.connection()``, ``session_driver``
    and the BEGIN took three for. Returns what ``session_driver`` does."""
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


_WAL_POSITION = "SELECT CAST(pg_current_wal_lsn() AS text)"


def position_after_commit(session: Session) -> str | None:
    """The primary's WAL position, read on the connection ``commit_on_driver``
    just committed on, before the session releases it: past the commit
    record, for one round trip and no second connection. Run in a greenlet.
    None when it cannot be read there (the connection is then closed, never
    pooled again): the caller asks another connection.

    Outside a transaction asyncpg runs the statement on its own, and the
    adapter, which began none, has nothing to roll back on release."""
    _, driver, connection = session.info[_DRIVER]
    try:
        with _invalidated_on_failure(connection):
            return str(await_(driver.fetchval(_WAL_POSITION)))
    except Exception:
        return None


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


def id_in(session: AsyncSession, column: Column, ids: Sequence[int]) -> ColumnElement[bool]:
    """``column IN ids``; one array parameter on PostgreSQL instead of one per id."""
    return in_bound_list(column, "ids", session.get_bind().dialect.name, Integer, values=ids)
