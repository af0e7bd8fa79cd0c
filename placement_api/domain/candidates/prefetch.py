"""Summaries read ahead, on the unit of work's second connection, while the
search runs (PostgreSQL only): the rows ``summary_rows`` reads, kept for
``load_summaries`` to build the summaries from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection, Coroutine
from contextlib import suppress
from dataclasses import replace
from typing import Any

from sqlalchemy import Row, Select
from sqlalchemy.ext.asyncio import AsyncConnection

from placement_api.db.driver import fetch_all
from placement_api.db.second_connection import SecondConnection
from placement_api.domain.candidates import summary_rows
from placement_api.domain.candidates.summary_rows import (
    FilterKind,
    Probed,
    SummaryScope,
    Tables,
    covers_most,
    probe,
    probe_statement,
    whole_tables,
)


class Prefetch:
    """Summary rows read ahead, on a second connection, while the request's
    rows are read and its search runs; where the pool cannot spare the
    connection, summaries are read after the search (docs/candidates.md)."""

    def __init__(
        self, second: SecondConnection, scope: SummaryScope, estimated_providers: float
    ) -> None:
        self.second = second
        self.scope = scope
        self.estimated_providers = estimated_providers
        # Ids probed, and the rows found; or every provider's rows.
        self.covered: set[int] = set()
        self.rows: list[Row[*Probed]] = []
        self.tables: Tables | None = None
        self._everything = False
        self._reading: asyncio.Future[None] | None = None

    def serves(self, scope: SummaryScope) -> bool:
        return self.scope == replace(scope, ids=self.scope.ids)

    async def start(self, ids: Collection[int] | None) -> None:
        """Start reading the summaries of ``ids`` (roots or providers, as the
        scope says) not read yet or, given None, of every provider; return
        at once. Nothing is read where ``load_summaries`` would read the
        same no slower, part by part."""
        if self._everything:
            return
        fresh = frozenset(ids or ()) - self.covered
        count = len(self.covered) + len(fresh)
        everything = ids is None or covers_most(self.estimated_providers, count)
        # Read from its module when called, like ``covers_most`` reads its share.
        if not everything and (not fresh or count >= summary_rows.PROBED_IN_ONE):
            return
        connection = await self.second.get()
        if connection is None:
            return
        if everything:
            self._everything = True
            await self._launch(self._read_everything(connection))
        else:
            self.covered |= fresh
            await self._launch(self._probe(connection, replace(self.scope, ids=fresh)))

    async def start_first_trees(
        self, by: FilterKind, members_of: Collection[int], most: int
    ) -> None:
        """Start reading the summaries of the first ``most`` trees, in root
        order, holding a provider that has one of the traits (or is in one
        of the aggregates) ``members_of``; return at once. For whole trees."""
        assert self.scope.whole_trees
        connection = await self.second.get()
        if connection is None:
            return
        statement = probe_statement(
            connection, True, self.scope.class_ids, self.scope.with_traits, by
        )
        parameters = {"members_of": sorted(members_of), "most": most}
        await self._launch(self._probe_first(connection, statement, parameters))

    async def _launch(self, read: Coroutine[Any, Any, None]) -> None:
        """Run ``read`` after the reads under way; return once it is sent."""
        self._reading = asyncio.ensure_future(_after(self._reading, read))
        # One turn of the loop sends it, whatever follows (a search never yields).
        await asyncio.sleep(0)

    async def _probe_first(
        self, connection: AsyncConnection, statement: Select[*Probed], parameters: dict[str, object]
    ) -> None:
        rows = await fetch_all(connection, statement, parameters)
        self.rows += rows
        self.covered.update(root for _, _, _, root, _, _ in rows if root is not None)

    async def _probe(self, connection: AsyncConnection, scope: SummaryScope) -> None:
        self.rows += await probe(connection, scope)

    async def _read_everything(self, connection: AsyncConnection) -> None:
        self.tables = await whole_tables(connection, self.scope)

    async def settle(self) -> None:
        """Wait for the reads under way."""
        if self._reading is not None:
            reading, self._reading = self._reading, None
            await reading

    async def close(self) -> None:
        """Wait for reads under way (their errors are the request's only if it
        settled them), so none runs once the unit of work closes the
        connection. A request cancelled meanwhile cancels the read it awaits,
        and resumes once that read has ended."""
        with suppress(Exception):
            await self.settle()


async def _after(previous: Awaitable[None] | None, read: Coroutine[Any, Any, None]) -> None:
    if previous is not None:
        try:
            await previous
        except BaseException:
            read.close()  # never started
            raise
    await read
