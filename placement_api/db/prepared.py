"""Statements of the hot paths: built once, compiled once per dialect, run
without the ORM.

The reads every client repeats on every pass (a provider's inventories, a
consumer's allocations, a provider tree) and the statements of an
allocation write are one statement each. Through ``session.execute`` each
costs more Python than PostgreSQL spends on it: the ORM's execution
context, a cache key built from the statement's structure, ``Row`` objects.
A ``Prepared`` statement keeps its SQL per dialect and, on PostgreSQL,
sends it straight to asyncpg through ``db.driver`` (asyncpg keeps it
prepared on each connection), inside the session's transaction when it has
one. Other databases run it through SQLAlchemy, with the same semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import ClauseElement, ColumnElement, Executable
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db import driver
from placement_api.db.driver import Column, Positional, in_bound_list

# How a statement says "column is one of the list bound as ``name``".
Membership = Callable[[Column, str], ColumnElement[bool]]


def in_expanding(column: Column, name: str) -> ColumnElement[bool]:
    """``column IN (...)``: SQLAlchemy expands the list on every run."""
    return in_bound_list(column, name, "sqlite")


def equals_any(column: Column, name: str) -> ColumnElement[bool]:
    """``column = ANY($n)`` with the list as one array, planned once
    (PostgreSQL only): see ``driver.in_bound_list``."""
    return in_bound_list(column, name, "postgresql", planned_once=True)


class Prepared:
    """A statement with named ``bindparam``s, given values by name when run.

    ``postgresql`` replaces ``statement`` there (the same statement with
    arrays for lists, see ``per_dialect``). The compiled SQL is kept by the
    object itself: it is built at import with its statement and lives as
    long as the process.
    """

    def __init__(self, statement: Executable, *, postgresql: Executable | None = None) -> None:
        self.statement = statement
        self._postgresql = statement if postgresql is None else postgresql
        # dialect name -> (SQL, parameter names in order, values the statement carries)
        self._compiled: dict[str, Positional] = {}

    @classmethod
    def per_dialect(cls, build: Callable[[Membership], Executable]) -> Prepared:
        """The statement ``build`` makes, with list memberships expanded
        (SQLite) or as arrays (PostgreSQL)."""
        return cls(build(in_expanding), postgresql=build(equals_any))

    async def rows(self, session: AsyncSession, **values: Any) -> Sequence[Sequence[Any]]:
        """The result rows, as tuples in the statement's column order
        (none for a statement that returns none)."""
        direct = await driver.session_driver(session)
        if direct is None:
            result = await (await session.connection()).execute(self.statement, values)
            rows: Sequence[Sequence[Any]] = result.all() if result.returns_rows else []
            return rows
        text, names, carried = self._sql(session)
        given = carried | values
        records: Sequence[Sequence[Any]] = await driver.fetch(
            direct, text, tuple(given[name] for name in names)
        )
        return records

    async def run_many(self, session: AsyncSession, values: Sequence[Mapping[str, Any]]) -> None:
        """Run the statement once per set of values, in one round trip on
        PostgreSQL (the driver pipelines them); nothing is returned."""
        if not values:
            return
        direct = await driver.session_driver(session)
        if direct is None:
            await (await session.connection()).execute(self.statement, list(values))
            return
        text, names, carried = self._sql(session)
        await driver.run_many(
            direct, text, [tuple({**carried, **each}[name] for name in names) for each in values]
        )

    def _sql(self, session: AsyncSession) -> Positional:
        dialect = session.get_bind().dialect
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            # Every statement given is a ClauseElement, and compiles to SQL.
            compiled = driver.compile_positional(cast(ClauseElement, self._postgresql), dialect)
            self._compiled[dialect.name] = compiled
        return compiled
