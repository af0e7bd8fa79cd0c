"""The few statements whose SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, DateTime, Table, func, literal
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


def insert(session: AsyncSession, table: Table) -> postgresql.Insert | sqlite.Insert:
    """The dialect's INSERT, which offers ``ON CONFLICT ... DO UPDATE`` on both."""
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def clock(session: AsyncSession) -> ColumnElement[datetime]:
    """Now, by the clock every API host shares: PostgreSQL's (the transaction's
    start) there; SQLite serves one host, whose clock this process reads."""
    if session.get_bind().dialect.name == "postgresql":
        return func.now()
    return literal(datetime.now(UTC), DateTime(timezone=True))
