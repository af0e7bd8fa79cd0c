"""A worker's copy of every provider's tree position, traits, aggregates and
inventory (``indexed_cloud``), kept current from the change feed, so that
candidates are found without reading them (``indexed_search``).

Before each use the index reads, in one statement, the feed's head and the
entries after the last index it applied (and those committed but not yet
given an index), then re-reads every provider they name. Re-reading is
idempotent, so an entry seen twice costs a read and nothing else; every
write committed before the request began has its entry in that snapshot,
so the index is never older than what the request may see. A gap (entries
pruned), a new epoch or too many entries at once reload it whole; a sweep
re-reads every provider, a span at a time (``index_sweep``), for the writes
that record no entries. Why and what it costs: docs/candidates.md, "The
provider index".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes, feed_index
from placement_api.domain.candidates.index_sweep import Sweep
from placement_api.domain.candidates.index_tables import (
    UNINDEXED_ONLY,
    Entry,
    FeedNews,
    feed_news,
    name_rows,
    provider_extent,
    provider_rows,
)
from placement_api.domain.candidates.indexed_cloud import IndexedCloud
from placement_api.domain.candidates.indexed_provider import (
    IndexedProvider,
    Names,
)

LOG = logging.getLogger(__name__)

# Entries applied one by one at most per refresh; more reload the index whole.
MOST_ENTRIES = 5000
# Entries not given an index yet are read again by every refresh (they may
# have committed out of order): past this many, the refresh indexes them,
# as the feed's own readers and pruning do.
SEQUENCE_AFTER = 100
# Providers (by id) read and indexed at a time by a whole load.
LOAD_BATCH = 5000


class ProviderIndex(IndexedCloud):
    """Every provider of the cloud, for one worker: owned by the app's
    services, refreshed before each use (``current``), one refresh at a time."""

    def __init__(
        self,
        factory: SessionFactory,
        *,
        max_providers: int,
        max_age: float,
        retry_interval: float,
    ) -> None:
        self._factory = factory
        self._max_providers = max_providers
        # Hand-written SQL records no entries: every provider is re-read
        # this often (``db import`` and ``audit --fix`` start a new epoch).
        self._max_age = max_age
        self._sweep = Sweep(max_age)
        # A whole load is under way: requests read the database meanwhile.
        self._loading = False
        self._retry_interval = retry_interval
        self._lock = asyncio.Lock()
        super().__init__()
        # The feed's epoch and the last index applied; None: not loaded.
        self._position: tuple[str, int] | None = None
        self._idle_until = 0.0
        self._unindexed = 0
        self.full_loads = 0

    # --- keeping it current -------------------------------------------------------

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[ProviderIndex | None]:
        """The index, brought up to every write committed so far and left
        as it is until the block ends (a search that lets other work run
        reads one state); None when it cannot serve (the cloud is larger
        than the setting allows, or the database failed it lately: the
        caller reads the database)."""
        if self._loading or time.monotonic() < self._idle_until:
            # Not worth waiting for a whole load, or for a search holding it.
            yield None
            return
        async with self._lock:
            yield await self.current()

    async def current(self) -> ProviderIndex | None:
        """``reading``'s refresh, under its lock."""
        if time.monotonic() < self._idle_until:
            return None
        try:
            async with unit_of_work(self._factory, write=False) as session:
                loaded = await self._refresh(session)
            if self._unindexed > SEQUENCE_AFTER:
                await self._sequence()
        except (errors.ServiceUnavailable, SQLAlchemyError, OSError) as exc:
            LOG.warning("provider index: refresh failed (%s); reading the database", exc)
            self._position = None
            self._idle_until = time.monotonic() + self._retry_interval
            return None
        if not loaded:
            # Too many providers: counted again after a while.
            self._idle_until = time.monotonic() + self._max_age
            return None
        return self

    async def _sequence(self) -> None:
        try:
            async with unit_of_work(self._factory, write=True) as session:
                await feed_index.sequence(session)
        except (errors.PlacementError, SQLAlchemyError, OSError):
            # A read-only database (a standby: its primary indexes them), or
            # an outage the next refresh will meet.
            LOG.debug("provider index: the feed could not be indexed", exc_info=True)

    async def _refresh(self, session: AsyncSession) -> bool:
        if self._sweep.stale(time.monotonic()):
            self._position = None
        position = self._position
        # A whole load needs no entry the head counts, only those not
        # indexed yet (to sequence them when they crowd).
        after = UNINDEXED_ONLY if position is None else position[1]
        news = await feed_news(session, after, MOST_ENTRIES + 1)
        if news is None:
            return False
        self._unindexed = sum(1 for entry in news.entries if entry[0] is None)
        if position is None or not self._applies(news, position):
            return await self._load_all(session, news)
        await self._apply(session, news.entries)
        self._position = (news.epoch, max(position[1], news.last_index))
        if self._sweep.due(time.monotonic()):
            return await self._sweep_step(session)
        return True

    async def _sweep_step(self, session: AsyncSession) -> bool:
        """Re-read the sweep's next span of providers (``index_sweep``); at
        the end of a sweep, count the providers and read the names again."""
        now = time.monotonic()
        span = self._sweep.next_span(now)
        if span is None:
            extent = await provider_extent(session)
            if not self._fits(extent.providers):
                return False
            names = Names.of(await name_rows(session))
            if names != self.names:
                self.names = names
                self._forget_summaries()
            self._sweep.start(extent.first_id, extent.last_id, now)
            return True
        first, last = span
        held = [p.uuid for ident, p in self.providers.items() if first <= ident <= last]
        self._put(await provider_rows(session, ids_between=span), held)
        return True

    def _fits(self, providers: int) -> bool:
        """Whether a cloud of ``providers`` may be copied; if not, the copy is dropped."""
        if providers <= self._max_providers:
            return True
        LOG.warning(
            "provider index: %d providers, more than PLACEMENT_CANDIDATES_INDEX_MAX_PROVIDERS "
            "(%d); candidates read the database",
            providers,
            self._max_providers,
        )
        self._position = None
        self._clear()
        return False

    @staticmethod
    def _applies(news: FeedNews, position: tuple[str, int]) -> bool:
        """Whether the entries carry on from ``position``: same epoch, none
        pruned in between, not too many."""
        epoch, last = position
        if news.epoch != epoch or news.last_index < last or len(news.entries) > MOST_ENTRIES:
            return False
        indexed = [entry[0] for entry in news.entries if entry[0] is not None]
        return news.last_index == last or (bool(indexed) and min(indexed) == last + 1)

    async def _load_all(self, session: AsyncSession, news: FeedNews) -> bool:
        """Everything afresh, from a head read before the rows, in batches of
        providers by id: between them the worker's other requests run (no
        search does: each waits for this refresh). One cancelled on the way
        (its client gone) leaves no position, so the next one starts over."""
        self._position = None
        extent = await provider_extent(session)
        if not self._fits(extent.providers):
            return False
        self._clear()
        self._loading = True
        try:
            self.names = Names.of(await name_rows(session))
            for first in range(extent.first_id, extent.last_id + 1, LOAD_BATCH):
                batch = (first, first + LOAD_BATCH - 1)
                self._put(await provider_rows(session, ids_between=batch), ())
        finally:
            self._loading = False
        self._position = (news.epoch, news.last_index)
        self._sweep.start(extent.first_id, extent.last_id, time.monotonic())
        self.full_loads += 1
        return True

    async def _apply(self, session: AsyncSession, entries: Iterable[Entry]) -> None:
        """Re-read every provider the entries name (and whole trees a
        provider's move may have changed), and the names when they changed."""
        uuids: set[str] = set()
        roots: set[int] = set()
        names = False
        for _, resource, action, uuid, details in entries:
            if resource == changes.ALLOCATION:
                uuids.update((details or {}).get("resource_providers", {}))
            elif resource == changes.RESOURCE_CLASS or (
                resource == changes.TRAIT and action != changes.UPDATED
            ):
                names = True
            else:
                uuids.add(uuid)
                if resource == changes.PROVIDER:
                    roots.update(self._roots_around(uuid, details or {}))
                names = names or resource == changes.AGGREGATE
        touched: list[IndexedProvider] = []
        if uuids:
            touched = self._put(await provider_rows(session, uuids=uuids, roots=roots), uuids)
        if names or self._names_missing(touched):
            self.names = Names.of(await name_rows(session))
            self._forget_summaries()

    def _roots_around(self, uuid: str, details: dict[str, Any]) -> set[int]:
        """The roots of the trees a provider was in and is now in."""
        roots = {self.providers[i].root for i in (self._by_uuid.get(uuid),) if i is not None}
        new_root = self._by_uuid.get(details.get("root_uuid") or "")
        if new_root is not None:
            roots.add(self.providers[new_root].root)
        return roots
