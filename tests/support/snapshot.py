"""Every row of every table, to prove a refused request changed nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from placement_api.db.engine import create_engine
from placement_api.db.models import Base

Snapshot = dict[str, list[tuple[Any, ...]]]


async def database_snapshot(database_url: str) -> Snapshot:
    """Each table's rows (all columns, timestamps included), in a stable order."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            snapshot: Snapshot = {}
            for table in Base.metadata.sorted_tables:
                rows = await connection.execute(select(table).order_by(*table.primary_key))
                snapshot[table.name] = [tuple(row) for row in rows]
            return snapshot
    finally:
        await engine.dispose()
