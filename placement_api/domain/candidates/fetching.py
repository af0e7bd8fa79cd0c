"""Small helpers for reading rows in bulk."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, TypeVarTuple, cast

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Dialect,
    Integer,
    Row,
    Select,
    String,
    any_,
    bindparam,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import LRUCache

from placement_api.db.prepared import discarded_on_failure, driver_in_transaction

IdColumn = InstrumentedAttribute[int] | InstrumentedAttribute[int | None]
T = TypeVar("T")
Ts = TypeVarTuple("Ts")
AnySelect = Select[*tuple[Any, ...]] | CompoundSelect[*tuple[Any, ...]]
# Where statements run: the request's session, or a connection of its own.
Source = AsyncSession | AsyncConnection
# Bound parameters per statement stay well under SQLite's and asyncpg's limits.
CHUNK = 5000
# ``id_in`` sends ids to PostgreSQL as one array parameter: batches there only
# bound memory, and every extra batch costs a round trip.
ARRAY_CHUNK = 100_000
# Compiled statements by their structure. Candidate statements come in a few
# dozen shapes (one per combination of classes, traits and scopes asked for),
# and compiling one costs more than running it; SQLAlchemy's own cache only
# serves statements it executes itself.
_COMPILED: LRUCache[tuple[object, ...], SQLCompiler] = LRUCache(512)


def chunked(values: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    batch: list[T] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def dialect_of(source: Source) -> Dialect:
    return source.get_bind().dialect if isinstance(source, AsyncSession) else source.dialect


def id_batches(source: Source, ids: Iterable[int]) -> Iterator[list[int]]:
    """Sorted ids in batches sized for ``id_in``."""
    postgresql = dialect_of(source).name == "postgresql"
    return chunked(sorted(ids), ARRAY_CHUNK if postgresql else CHUNK)


async def fetch_all(
    source: Source,
    statement: Select[*Ts] | CompoundSelect[*Ts],
    parameters: Mapping[str, Any] | None = None,
) -> Sequence[Row[*Ts]]:
    """Run a Core statement without the ORM's result processing; ``parameters``
    give values to ``bindparam``s the statement names.

    On PostgreSQL the statement goes straight to asyncpg, whose records
    unpack like rows: candidate queries read thousands of rows, and building
    SQLAlchemy ``Row`` objects for them costs more than the query itself.
    """
    connection = await source.connection() if isinstance(source, AsyncSession) else source
    if connection.dialect.name != "postgresql":
        return (await connection.execute(statement, parameters)).all()
    sql, arguments = _positional_sql(statement, connection.dialect, parameters)
    driver = await driver_in_transaction(connection)
    with discarded_on_failure(connection):
        return cast("Sequence[Row[*Ts]]", await driver.fetch(sql, *arguments))


def _positional_sql(
    statement: AnySelect, dialect: Dialect, parameters: Mapping[str, Any] | None
) -> tuple[str, list[Any]]:
    """The statement's SQL, lists expanded, and its arguments in order.

    The compiled form is cached by the statement's cache key, the structure
    SQLAlchemy's own statement cache uses; the key carries this statement's
    bound values, which are put in place of those compiled with.
    """
    key = statement._generate_cache_key()
    if key is None:
        compiled: SQLCompiler = statement.compile(dialect=dialect)
        values = compiled.construct_params(parameters, escape_names=False)
    else:
        cached = _COMPILED.get((dialect.name, key.key))
        if cached is None:
            cached = statement.compile(dialect=dialect, cache_key=key)
            _COMPILED[(dialect.name, key.key)] = cached
        compiled = cached
        values = compiled.construct_params(
            parameters, extracted_parameters=key.bindparams, escape_names=False
        )
    state = compiled.construct_expanded_state(values, escape_names=False)
    return state.statement, [state.parameters[name] for name in state.positiontup or ()]


def id_in(session: AsyncSession, column: IdColumn, ids: Sequence[int]) -> ColumnElement[bool]:
    """``column IN ids``; one array parameter on PostgreSQL instead of one per id."""
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam("ids", list(ids), type_=ARRAY(Integer), unique=True))
    return column.in_(ids)


def in_bound_list(
    column: IdColumn | InstrumentedAttribute[str],
    name: str,
    dialect: str,
    element_type: type[Integer] | type[String] = Integer,
) -> ColumnElement[bool]:
    """``column IN`` the list bound as ``name`` when the statement runs: one
    array parameter on PostgreSQL, so that one prepared statement serves
    lists of any length; a list expanded into parameters elsewhere."""
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=ARRAY(element_type)))
    return column.in_(bindparam(name, expanding=True))
