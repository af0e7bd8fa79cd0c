"""The few statements whose SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, DateTime, Interval, Table, func, literal
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


def not_before(
    session: AsyncSession,
    moment: ColumnElement[datetime],
    now: datetime,
    seconds: ColumnElement[int],
) -> ColumnElement[bool]:
    """``moment >= now - seconds`` (a whole number of seconds, per row), exact to
    the microsecond on both backends."""
    if session.get_bind().dialect.name == "postgresql":
        since = literal(now, DateTime(timezone=True)) - func.make_interval(
            0, 0, 0, 0, 0, 0, seconds, type_=Interval()
        )
        return moment >= since
    # SQLite stores 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC) and compares it as text. Its
    # date functions keep milliseconds only, so they shift the whole seconds and the
    # microseconds are appended as they are (the shift is whole seconds).
    utc = now.astimezone(UTC)
    shifted = func.strftime(
        "%Y-%m-%d %H:%M:%S", utc.strftime("%Y-%m-%d %H:%M:%S"), func.printf("-%d seconds", seconds)
    )
    return moment >= shifted + f".{utc.microsecond:06d}"
