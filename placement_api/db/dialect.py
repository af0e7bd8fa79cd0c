"""The few statements whose SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


async def insert_ignoring_duplicates(
    session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]]
) -> None:
    """INSERT rows, skipping any that collide with a unique constraint."""
    if not rows:
        return
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(postgresql.insert(table).on_conflict_do_nothing(), rows)
    else:
        await session.execute(sqlite.insert(table).on_conflict_do_nothing(), rows)
