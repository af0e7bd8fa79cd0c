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
        adapted = raw.dbapi_connection
        # SQLAlchemy's asyncpg adapter sends BEGIN just before the first
        # statement it runs itself; one sent to the driver directly opens
        # the transaction the same way (nothing is sent in autocommit).
        if adapted._transaction is None and not adapted.autocommit:  # type: ignore[union-attr]
            await adapted._start_transaction()  # type: ignore[union-attr]
        driver = raw.driver_connection
        assert driver is not None
        records: Sequence[Sequence[Any]] = await driver.fetch(
            text, *(values[name] for name in names)
        )
        return records
