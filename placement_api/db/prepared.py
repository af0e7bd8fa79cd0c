"""Statements of the hot reads: built once, compiled once per dialect, run
without the ORM.

The reads every client repeats on every pass (a provider's inventories, a
consumer's allocations, a provider tree) are one statement each. Through
``session.execute`` each costs more Python than PostgreSQL spends on it: the
ORM's execution context, a cache key built from the statement's structure,
``Row`` objects. A ``Prepared`` statement keeps its SQL per dialect and,
on PostgreSQL, sends it straight to asyncpg (which keeps it prepared on each
connection), inside the session's transaction when it has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession


class Prepared:
    """A SELECT with named ``bindparam``s, given values by name when run.

    The compiled SQL is kept per dialect name by the object itself: it is
    built at import with its statement and lives as long as the process.
    """

    def __init__(self, statement: Select[*tuple[Any, ...]]) -> None:
        self.statement = statement
        self._compiled: dict[str, tuple[str, tuple[str, ...]]] = {}

    async def rows(self, session: AsyncSession, **values: Any) -> Sequence[Sequence[Any]]:
        """The result rows, as tuples in the statement's column order."""
        connection = await session.connection()
        dialect = connection.dialect
        if dialect.name != "postgresql":
            rows: Sequence[Sequence[Any]] = (await connection.execute(self.statement, values)).all()
            return rows
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            sql = self.statement.compile(dialect=dialect)
            compiled = self._compiled[dialect.name] = (sql.string, tuple(sql.positiontup or ()))
        text, names = compiled
        raw = await connection.get_raw_connection()
        await begin_transaction(raw.dbapi_connection)
        driver = raw.driver_connection
        assert driver is not None
        records: Sequence[Sequence[Any]] = await driver.fetch(
            text, *(values[name] for name in names)
        )
        return records


async def begin_transaction(adapted: Any) -> None:
    """Open the session's transaction if it is not open yet. SQLAlchemy's
    asyncpg adapter sends BEGIN just before the first statement it runs
    itself; statements sent to the driver directly would otherwise each run
    in a transaction of their own. In autocommit (reads) nothing is sent."""
    if adapted._transaction is None and not adapted.autocommit:
        await adapted._start_transaction()
