"""Candidates of a cloud of trees (nested providers, sharing providers) from
the worker's provider index, for a request of one unsuffixed group: its
rows, the sharing providers' trees and the tree rules, as the database path
reads them (``queries``, ``planning``), handed to the same options and walk
(``search``); then the summaries of the trees the candidates come from.

Trees are taken in root id order, as the database path's windows take them.
Only the pacing of the walk awaits: the caller holds the index meanwhile.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from placement_api.domain.candidates import pacing, windowing
from placement_api.domain.candidates.combinations import Candidate, SearchRules, providers_of
from placement_api.domain.candidates.indexed_summaries import summaries_of
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest
from placement_api.domain.candidates.options import SharingMap, TreeRule
from placement_api.domain.candidates.planning import group_plan
from placement_api.domain.candidates.provider_filters import RootWindow
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.domain.candidates.search import search_steps
from placement_api.domain.candidates.search_settings import SearchSettings
from placement_api.domain.candidates.service import CandidatesResult
from placement_api.domain.candidates.summary_rows import FilterKind

Row = tuple[int, int, int]


def _in_all(ids: frozenset[int], sets: Iterable[frozenset[int]]) -> bool:
    return all(not any_of.isdisjoint(ids) for any_of in sets)


def _scanned_roots(index: ProviderIndex, group: ResolvedGroup, sharing: set[int]) -> list[int]:
    """The roots, in id order, of every tree whose own providers (sharing
    ones aside) may have rows: the ``in_tree`` root, else the trees of the
    members of one ``member_of`` set or of the holders of one required
    trait set no sharing provider has (the narrowest), else all."""
    if group.tree_root is not None:
        return [group.tree_root]
    sharing_traits = frozenset().union(*(index.providers[p].traits for p in sharing))
    filters: list[tuple[FilterKind, frozenset[int]]] = [
        *(("aggregate", any_of) for any_of in group.member_of),
        *(("trait", any_of) for any_of in group.required if any_of.isdisjoint(sharing_traits)),
    ]
    if not filters:
        return index.roots()
    return index.roots_holding(*min(filters, key=lambda f: index.count(*f)))


def group_rows(
    index: ProviderIndex,
    group: ResolvedGroup,
    request: ResolvedRequest,
    roots: Iterable[int],
    sharing: set[int],
    *,
    shared: bool,
) -> list[Row]:
    """``queries.unsuffixed_rows`` of the trees of ``roots``, of their
    sharing providers (``shared``) or of the others: (provider, root, class)
    for each class a provider has room for, by root and provider. Tree-level
    rules (``root_required``, forbidden aggregates) spare sharing providers,
    which serve other trees (``options`` checks those per tree)."""
    amounts = sorted(group.amounts.items())
    forbidden, outside = group.forbidden, group.forbidden_aggregates
    root_required, root_forbidden = request.root_required, request.root_forbidden
    member_of = group.member_of
    providers = index.providers
    rows: list[Row] = []
    append = rows.append
    for root_id in roots:
        root = providers[root_id]
        tree_passes = (
            root_required <= root.traits
            and root_forbidden.isdisjoint(root.traits)
            and outside.isdisjoint(root.aggregates)
        )
        if not (tree_passes or shared):
            continue
        root_member = not member_of or _in_all(root.aggregates, member_of)
        for ident in index.tree(root_id):
            if (ident in sharing) is not shared:
                continue
            provider = providers[ident]
            stocks = provider.stocks
            if not stocks:  # a root of children, most often
                continue
            if (forbidden or outside) and not (
                forbidden.isdisjoint(provider.traits) and outside.isdisjoint(provider.aggregates)
            ):
                continue
            if not (root_member or _in_all(provider.aggregates, member_of)):
                continue
            for class_id, amount in amounts:
                # ``fits_clause`` on the row (``Stock``), by index: run per class and provider.
                stock = stocks.get(class_id)
                if (
                    stock is not None
                    and stock[3] <= amount <= stock[4]
                    and (stock[5] == 1 or amount % stock[5] == 0)
                ):
                    append((ident, root_id, class_id))
    return rows


def sharing_map(
    index: ProviderIndex, used: frozenset[int], window: RootWindow | None
) -> SharingMap:
    """``planning.sharing_map``: the trees (of ``window``, when given) each
    sharing provider serves, those with a member in one of its aggregates."""
    if not used:
        return SharingMap()
    providers = index.providers
    aggregates = {p: providers[p].aggregates for p in used if providers[p].aggregates}
    anchors: dict[int, frozenset[int]] = {}
    for provider in used:
        served: set[int] = set()
        for aggregate in aggregates.get(provider, ()):
            roots = index.roots_holding("aggregate", frozenset((aggregate,)))
            if window is not None:
                roots = roots[bisect_left(roots, window.first) : bisect_right(roots, window.last)]
            served.update(roots)
        anchors[provider] = frozenset(served)
    return SharingMap(providers=used, anchors=anchors, aggregates=aggregates)


def tree_rule(
    index: ProviderIndex, group: ResolvedGroup, request: ResolvedRequest, used: frozenset[int]
) -> TreeRule:
    """``planning.tree_rules`` for the unsuffixed group."""
    required, forbidden = request.root_required, request.root_forbidden
    if not used:
        return TreeRule(required, forbidden)
    providers = index.providers
    root_traits = {
        holder: providers[holder].traits & (required | forbidden)
        for holder in index.holding("trait", required | forbidden)
        if providers[holder].parent is None
    }
    banned = frozenset(index.holding("aggregate", group.forbidden_aggregates))
    return TreeRule(required, forbidden, root_traits, banned)


class _TreeSearch:
    """What every window of one search shares: the sharing providers' rows,
    the tree rule, the roots and candidates so far."""

    def __init__(
        self,
        index: ProviderIndex,
        request: CandidateRequest,
        resolved: ResolvedRequest,
        settings: SearchSettings,
    ) -> None:
        self.index, self.request, self.resolved = index, request, resolved
        self.slice_seconds = settings.slice_seconds
        (self.group,) = resolved.groups
        self.sharing = index.sharing
        providers = index.providers
        roots = {providers[p].root for p in self.sharing}
        if self.group.tree_root is not None:
            roots &= {self.group.tree_root}
        self.shared_rows = self._rows(sorted(roots), shared=True)
        self.used = frozenset(row[0] for row in self.shared_rows)
        self.rule = tree_rule(index, self.group, resolved, self.used)
        self.root_of = {provider: root for provider, root, _ in self.shared_rows}
        self.seen: set[tuple[object, ...]] = set()

    def _rows(self, roots: Iterable[int], *, shared: bool) -> list[Row]:
        return group_rows(self.index, self.group, self.resolved, roots, self.sharing, shared=shared)

    async def window(
        self, window: RootWindow | None, roots: Sequence[int], wanted: int | None
    ) -> list[Candidate]:
        """Up to ``wanted`` candidates anchored in ``window`` (None: every
        tree), whose own providers are those of ``roots``."""
        native = self._rows(roots, shared=False)
        if not self.request.nested_aware:  # only the walks before nested trees look roots up
            self.root_of.update((provider, root) for provider, root, _ in native)
        rows = self.shared_rows + native
        served = sharing_map(self.index, self.used, window)
        plan = group_plan(self.group, rows, served, self.rule, window)
        providers = self.index.providers
        rules = SearchRules(
            isolate=self.request.isolate,
            nested_aware=self.request.nested_aware,
            # Only the group's required traits are looked up, by the walk.
            provider_traits=(
                {row[0]: providers[row[0]].traits for row in rows} if self.group.required else {}
            ),
            root_of=self.root_of,
            sharing=self.used,
        )
        anchors = sorted(a for a in plan.options if window is None or a in window)
        steps = search_steps([plan], rules, anchors, stop_after=wanted, seen=self.seen)
        return await pacing.gather(steps, self.slice_seconds)


async def tree_candidates(
    index: ProviderIndex,
    request: CandidateRequest,
    resolved: ResolvedRequest,
    settings: SearchSettings,
    most: int | None,
) -> CandidatesResult | None:
    """The answer to a request of one unsuffixed group, up to ``most``
    candidates, window by window as the database path finds them; None
    when the index cannot give it."""
    search = _TreeSearch(index, request, resolved, settings)
    group = search.group
    scanned = _scanned_roots(index, group, search.sharing)
    if most is None or not scanned:
        candidates = await search.window(None, scanned, most)
    else:
        candidates = []
        policy = windowing.POLICY
        progress = policy.start(most)
        first = 0
        while not progress.complete and progress.scanned < len(scanned):
            roots = scanned[progress.scanned : progress.scanned + progress.size]
            # The windows cover every root id: trees without a scanned root
            # may still be served by sharing providers alone.
            last = sys.maxsize if progress.scanned + len(roots) >= len(scanned) else roots[-1]
            found = await search.window(RootWindow(first, last), roots, progress.still_wanted)
            candidates += found
            first = last + 1
            progress = policy.after(progress, len(found))
    if not candidates:
        return CandidatesResult()
    providers = index.providers
    used_providers = providers_of(candidates)
    shown: Iterable[int] = used_providers
    if request.nested_aware:
        used_roots = {providers[p].root for p in used_providers}
        shown = [p for root in used_roots for p in index.tree(root)]
    summaries = summaries_of(index, shown, settings, group.amounts.keys())
    if summaries is None:
        return None
    return CandidatesResult(
        candidates=candidates,
        summaries=summaries,
        uuids={ident: providers[ident].uuid for ident in summaries},
        class_names=resolved.class_names,
    )
