"""A worker's copy of every provider's tree position, traits, aggregates and
inventory, kept current from the change feed, so that a flat cloud's
candidates are found without reading them (``indexed_search``).

Before each use the index reads, in one statement, the feed's head and the
entries after the last index it applied (and those committed but not yet
given an index), then re-reads every provider they name. Re-reading is
idempotent, so an entry seen twice costs a read and nothing else; every
write committed before the request began has its entry in that snapshot,
so the index is never older than what the request may see. A gap (entries
pruned), a new epoch or too many entries at once reload it whole. Why and
what it costs: docs/candidates.md, "The provider index".
"""

from __future__ import annotations

import asyncio
import logging
import time
from bisect import insort
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any, Literal

import os_traits
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes, feed_index
from placement_api.domain.candidates.index_tables import (
    UNINDEXED_ONLY,
    Entry,
    FeedNews,
    ProviderRows,
    feed_news,
    name_rows,
    provider_extent,
    provider_rows,
)
from placement_api.domain.candidates.indexed_provider import (
    IndexedProvider,
    Names,
    Stock,
    stock_of,
)
from placement_api.domain.candidates.summary_rows import FilterKind

LOG = logging.getLogger(__name__)

# Entries applied one by one at most per refresh; more reload the index whole.
MOST_ENTRIES = 5000
# Entries not given an index yet are read again by every refresh (they may
# have committed out of order): past this many, the refresh indexes them,
# as the feed's own readers and pruning do.
SEQUENCE_AFTER = 100
# Providers (by id) read and indexed at a time by a whole load.
LOAD_BATCH = 5000


class ProviderIndex:
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
        # Hand-written SQL records no entries: a whole reload this often
        # picks it up (``db import`` and ``audit --fix`` start a new epoch).
        self._max_age = max_age
        self._loaded_at = 0.0
        self._retry_interval = retry_interval
        self._lock = asyncio.Lock()
        self.providers: dict[int, IndexedProvider] = {}
        self.names = Names()
        self._by_uuid: dict[str, int] = {}
        self._holders: dict[int, set[int]] = {}
        self._members: dict[int, set[int]] = {}
        self._sets: dict[frozenset[int], frozenset[int]] = {}
        # Providers that are not their tree's root.
        self._nested: set[int] = set()
        # Each tree's providers in id order, by root.
        self._trees: dict[int, list[int]] = {}
        # Orders asked for, kept until a provider comes, goes or changes its
        # traits or aggregates; they hold the providers, replaced in place.
        self._sorted: dict[tuple[str, frozenset[int]], list[IndexedProvider]] = {}
        self._sorted_roots: list[int] | None = None
        # The feed's epoch and the last index applied; None: not loaded.
        self._position: tuple[str, int] | None = None
        self._idle_until = 0.0
        self._unindexed = 0
        self.full_loads = 0

    # --- what a search asks -------------------------------------------------------

    @property
    def flat(self) -> bool:
        """Every tree is a single provider, and none shares its inventory."""
        return not self._nested and not self.sharing

    @property
    def sharing(self) -> set[int]:
        """The providers that share their inventory (read only)."""
        shares = self.names.traits.get(os_traits.MISC_SHARES_VIA_AGGREGATE)
        return self._holders.get(shares, set()) if shares is not None else set()

    def tree(self, root: int) -> list[int]:
        """The providers of the tree of ``root``, in id order (read only)."""
        return self._trees.get(root, [])

    def roots(self) -> list[int]:
        """Every tree's root, in id order (read only)."""
        if self._sorted_roots is None:
            self._sorted_roots = sorted(self._trees)
        return self._sorted_roots

    def holding(self, kind: FilterKind, any_of: frozenset[int]) -> set[int]:
        """The holders of any of the traits (``kind`` "trait") or the
        members of any of the aggregates."""
        of = self._holders if kind == "trait" else self._members
        return set().union(*(of.get(i, ()) for i in any_of))

    def tree_of(self, uuid: str) -> int | None:
        ident = self._by_uuid.get(uuid)
        return None if ident is None else self.providers[ident].root

    def in_order(
        self, kind: FilterKind | Literal["all"] = "all", any_of: frozenset[int] = frozenset()
    ) -> list[IndexedProvider]:
        """Providers in id order: all of them, or the holders of any of the
        traits (``kind`` "trait") or the members of any of the aggregates."""
        key = (kind, any_of)
        found = self._sorted.get(key)
        if found is None:
            if kind == "all":
                ids: Iterable[int] = self.providers
            else:
                ids = self.holding(kind, any_of)
            found = self._sorted[key] = [self.providers[i] for i in sorted(ids)]
        return found

    def count(self, kind: FilterKind, any_of: frozenset[int]) -> int:
        of = self._holders if kind == "trait" else self._members
        return sum(len(of.get(i, ())) for i in any_of)

    # --- keeping it current -------------------------------------------------------

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[ProviderIndex | None]:
        """The index, brought up to every write committed so far and left
        as it is until the block ends (a search that lets other work run
        reads one state); None when it cannot serve (the cloud is larger
        than the setting allows, or the database failed it lately: the
        caller reads the database)."""
        if time.monotonic() < self._idle_until:
            # Not worth waiting for a search holding it.
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
        if time.monotonic() - self._loaded_at > self._max_age:
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
        return True

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
        if extent.providers > self._max_providers:
            LOG.warning(
                "provider index: %d providers, more than PLACEMENT_CANDIDATES_INDEX_MAX_PROVIDERS "
                "(%d); candidates read the database",
                extent.providers,
                self._max_providers,
            )
            self._clear()
            return False
        self._clear()
        self.names = Names.of(await name_rows(session))
        for first in range(extent.first_id, extent.last_id + 1, LOAD_BATCH):
            batch = (first, first + LOAD_BATCH - 1)
            self._put(await provider_rows(session, ids_between=batch), ())
        self._position = (news.epoch, news.last_index)
        self._loaded_at = time.monotonic()
        self.full_loads += 1
        return True

    def _clear(self) -> None:
        self.providers, self._by_uuid = {}, {}
        self._holders, self._members, self._nested, self._sets = {}, {}, set(), {}
        self._trees = {}
        self._forget_order()

    def _forget_order(self) -> None:
        self._sorted.clear()
        self._sorted_roots = None

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
            for provider in self.providers.values():
                provider.summary = None

    def _roots_around(self, uuid: str, details: dict[str, Any]) -> set[int]:
        """The roots of the trees a provider was in and is now in."""
        roots = {self.providers[i].root for i in (self._by_uuid.get(uuid),) if i is not None}
        new_root = self._by_uuid.get(details.get("root_uuid") or "")
        if new_root is not None:
            roots.add(self.providers[new_root].root)
        return roots

    def _names_missing(self, providers: Iterable[IndexedProvider]) -> bool:
        names = self.names
        return any(
            not p.traits <= names.trait_names.keys()
            or not p.stocks.keys() <= names.class_names.keys()
            for p in providers
        )

    def _put(self, rows: ProviderRows, uuids: Iterable[str]) -> list[IndexedProvider]:
        """Replace the providers read (and drop those named but gone); the
        providers read."""
        read = {row[0] for row in rows.positions}
        gone = {self._by_uuid[u] for u in uuids if u in self._by_uuid} - read
        traits: dict[int, set[int]] = {}
        for holder, trait in rows.traits:
            traits.setdefault(holder, set()).add(trait)
        aggregates: dict[int, set[int]] = {}
        for member, aggregate in rows.aggregates:
            aggregates.setdefault(member, set()).add(aggregate)
        stocks: dict[int, dict[int, Stock]] = {}
        for row in rows.inventories:
            stock = stock_of(row)
            stocks.setdefault(row[0], {})[stock.class_id] = stock
        reordered = bool(gone)
        for ident in gone:
            self._drop(ident)
        touched = []
        for ident, uuid, root, parent in rows.positions:
            provider = IndexedProvider(
                ident,
                uuid,
                root,
                parent,
                self._shared(frozenset(traits.get(ident, ()))),
                self._shared(frozenset(aggregates.get(ident, ()))),
                stocks.get(ident, {}),
            )
            old = self.providers.get(ident)
            if old is not None and (old.uuid, old.root, old.parent, old.traits, old.aggregates) == (
                uuid,
                root,
                parent,
                provider.traits,
                provider.aggregates,
            ):
                # Usage or inventory changed: updated in place, so the
                # orders kept (which hold the providers) stay right.
                old.stocks, old.summary = provider.stocks, None
                touched.append(old)
                continue
            reordered = True
            self._drop(ident)
            self._add(provider)
            touched.append(provider)
        if reordered:
            self._forget_order()
        return touched

    def _shared(self, ids: frozenset[int]) -> frozenset[int]:
        """One object per set of traits or aggregates: providers share a few."""
        return self._sets.setdefault(ids, ids)

    def _add(self, provider: IndexedProvider) -> None:
        ident = provider.id
        self.providers[ident] = provider
        self._by_uuid[provider.uuid] = ident
        for trait in provider.traits:
            self._holders.setdefault(trait, set()).add(ident)
        for aggregate in provider.aggregates:
            self._members.setdefault(aggregate, set()).add(ident)
        insort(self._trees.setdefault(provider.root, []), ident)
        if provider.root != ident:
            self._nested.add(ident)

    def _drop(self, ident: int) -> None:
        provider = self.providers.pop(ident, None)
        if provider is None:
            return
        if self._by_uuid.get(provider.uuid) == ident:
            del self._by_uuid[provider.uuid]
        for trait in provider.traits:
            self._holders.get(trait, set()).discard(ident)
        for aggregate in provider.aggregates:
            self._members.get(aggregate, set()).discard(ident)
        self._nested.discard(ident)
        tree = self._trees.get(provider.root)
        if tree is not None:
            tree.remove(ident)
            if not tree:
                del self._trees[provider.root]
