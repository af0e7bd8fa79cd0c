"""What the provider index holds and how it is looked up: every provider
(``IndexedProvider``), the names, and the sets and orders a search asks for,
kept consistent as providers are put in and dropped. Keeping it current
from the database is ``provider_index``'s."""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable
from typing import Literal

import os_traits
from sqlalchemy.util import LRUCache

from placement_api.domain.candidates.index_tables import ProviderRows
from placement_api.domain.candidates.indexed_provider import (
    IndexedProvider,
    Names,
    Stock,
    stock_of,
)
from placement_api.domain.candidates.summary_rows import FilterKind

# Orders of providers (or of roots) by filter kept at most.
KEPT_ORDERS = 64


class IndexedCloud:
    """Every provider of the cloud, with the sets and orders searches use."""

    def __init__(self) -> None:
        self.providers: dict[int, IndexedProvider] = {}
        self.names = Names()
        self._by_uuid: dict[str, int] = {}
        self._holders: dict[int, set[int]] = {}
        self._members: dict[int, set[int]] = {}
        self._sets: dict[frozenset[int], frozenset[int]] = {}
        # Each tree's providers in id order, by root.
        self._trees: dict[int, list[int]] = {}
        # Orders asked for, kept until a provider comes, goes or changes its
        # traits or aggregates; they hold the providers, replaced in place.
        # The filters asked for are the clients' to choose: the most recent
        # ones are kept.
        self._sorted: LRUCache[tuple[str, frozenset[int]], list[IndexedProvider]] = LRUCache(
            KEPT_ORDERS
        )
        self._sorted_roots: list[int] | None = None
        self._roots_holding: LRUCache[tuple[FilterKind, frozenset[int]], list[int]] = LRUCache(
            KEPT_ORDERS
        )

    # --- what a search asks -------------------------------------------------------

    @property
    def flat(self) -> bool:
        """Every tree is a single provider, and none shares its inventory."""
        # As many trees as providers: each tree is its root alone.
        return len(self._trees) == len(self.providers) and not self.sharing

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

    def roots_holding(self, kind: FilterKind, any_of: frozenset[int]) -> list[int]:
        """The roots of the trees with a holder of any of the traits (``kind``
        "trait") or a member of any of the aggregates, in id order (read only)."""
        key = (kind, any_of)
        found = self._roots_holding.get(key)
        if found is None:
            providers = self.providers
            roots = {providers[p].root for p in self.holding(kind, any_of)}
            found = self._roots_holding[key] = sorted(roots)
        return found

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

    def _clear(self) -> None:
        self.providers, self._by_uuid = {}, {}
        self._holders, self._members, self._sets = {}, {}, {}
        self._trees = {}
        self._forget_order()

    def _forget_order(self) -> None:
        self._sorted.clear()
        self._sorted_roots = None
        self._roots_holding.clear()

    def _forget_summaries(self) -> None:
        for provider in self.providers.values():
            provider.summary = None

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
        tree = self._trees.get(provider.root)
        if tree is not None:
            tree.remove(ident)
            if not tree:
                del self._trees[provider.root]
