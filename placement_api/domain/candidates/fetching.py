"""Small helpers for reading rows in bulk."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar, TypeVarTuple, cast

from sqlalchemy import ColumnElement, Integer, Row, Select, any_, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

IdColumn = InstrumentedAttribute[int] | InstrumentedAttribute[int | None]
T = TypeVar("T")
Ts = TypeVarTuple("Ts")
# Bound parameters per statement stay well under SQLite's and asyncpg's limits.
CHUNK = 5000
# ``id_in`` sends ids to PostgreSQL as one array parameter: batches there only
# bound memory, and every extra batch costs a round trip.
ARRAY_CHUNK = 100_000


def chunked(values: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    batch: list[T] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def id_batches(session: AsyncSession, ids: Iterable[int]) -> Iterator[list[int]]:
    """Sorted ids in batches sized for ``id_in``."""
    postgresql = session.get_bind().dialect.name == "postgresql"
    return chunked(sorted(ids), ARRAY_CHUNK if postgresql else CHUNK)


async def fetch_all(session: AsyncSession, statement: Select[*Ts]) -> Sequence[Row[*Ts]]:
    """Run a Core statement without the ORM's result processing.

    On PostgreSQL the statement goes straight to asyncpg, whose records
    unpack like rows: candidate queries read thousands of rows, and building
    SQLAlchemy ``Row`` objects for them costs more than the query itself.
    """
    connection = await session.connection()
    if connection.dialect.name != "postgresql":
        return (await connection.execute(statement)).all()
    compiled = statement.compile(
        dialect=connection.dialect, compile_kwargs={"render_postcompile": True}
    )
    params = compiled.construct_params()
    driver = (await connection.get_raw_connection()).driver_connection
    assert driver is not None
    records = await driver.fetch(
        str(compiled), *(params[name] for name in compiled.positiontup or ())
    )
    return cast("Sequence[Row[*Ts]]", records)


def id_in(session: AsyncSession, column: IdColumn, ids: Sequence[int]) -> ColumnElement[bool]:
    """``column IN ids``; one array parameter on PostgreSQL instead of one per id."""
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam("ids", list(ids), type_=ARRAY(Integer), unique=True))
    return column.in_(ids)
