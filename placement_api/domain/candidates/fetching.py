"""Ids read in batches sized for the database's parameter limits."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from sqlalchemy import Dialect, Engine
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from placement_api.db.driver import Source

IdColumn = InstrumentedAttribute[int] | InstrumentedAttribute[int | None]
T = TypeVar("T")
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


def engine_of(source: Source) -> Engine:
    return source.get_bind().engine if isinstance(source, AsyncSession) else source.sync_engine


def dialect_of(source: Source) -> Dialect:
    return source.get_bind().dialect if isinstance(source, AsyncSession) else source.dialect


def id_batches(source: Source, ids: Iterable[int]) -> Iterator[list[int]]:
    """Sorted ids in batches sized for ``id_in``."""
    postgresql = dialect_of(source).name == "postgresql"
    return chunked(sorted(ids), ARRAY_CHUNK if postgresql else CHUNK)
