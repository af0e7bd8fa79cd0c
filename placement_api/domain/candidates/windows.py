"""The search for one request, window by window: reads each window's rows,
runs the search on them, and starts reading summaries ahead. The policy
(window sizes, when to read at once) is ``windowing``'s; the why is in
docs/candidates.md."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from functools import cached_property, partial
from typing import NamedTuple, cast

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates import lookups, pacing, queries, windowing
from placement_api.domain.candidates.combinations import Candidate, SearchRules
from placement_api.domain.candidates.member_pages import MemberPages, narrowest_pages
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest
from placement_api.domain.candidates.options import SharingMap, TreeRule
from placement_api.domain.candidates.planning import (
    Rows,
    group_plan,
    sharing_map,
    tree_rules,
    unsuffixed_plan,
)
from placement_api.domain.candidates.prefetch import Prefetch
from placement_api.domain.candidates.prelude import Prelude
from placement_api.domain.candidates.provider_filters import RootList, RootWindow, RowScope, Window
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.domain.candidates.search import search_steps
from placement_api.domain.candidates.search_settings import SearchSettings, stop_after
from placement_api.domain.candidates.single_provider import single_provider_search
from placement_api.domain.candidates.summary_rows import FilterKind
from placement_api.domain.candidates.trait_completion import (
    TraitCompletion,
    native_filter_sets,
)

# A trait or aggregate filter on providers, when it leaves few: the trees
# its providers are in are read whole, in one read.
FewFilter = tuple[FilterKind, frozenset[int]]


class Found(NamedTuple):
    candidates: list[Candidate]
    # The root of every provider the rows named.
    root_of: dict[int, int]


async def _listed_trees(roots: tuple[int, ...], done: int, size: int) -> Window | None:
    return RootList(roots[done : done + size]) if done < len(roots) else None


async def _tree_range(first: int, last: int, done: int, size: int) -> Window | None:
    start = first + done
    return RootWindow(start, min(start + size - 1, last)) if start <= last else None


def _few_filter(
    policy: windowing.WindowPolicy,
    wanted: int,
    trait_sets: list[frozenset[int]],
    aggregate_sets: list[frozenset[int]],
    members: tuple[int, ...],
) -> FewFilter | None:
    """Of the filters applied in SQL, the one leaving the fewest providers
    (``members``, counted in that order), if they are few."""
    if not members or not policy.is_few(min(members), wanted):
        return None
    narrowest = members.index(min(members))
    if narrowest < len(trait_sets):
        return ("trait", trait_sets[narrowest])
    return ("aggregate", aggregate_sets[narrowest - len(trait_sets)])


class Finder:
    """The search for one request, window by window."""

    def __init__(
        self,
        session: AsyncSession,
        request: CandidateRequest,
        resolved: ResolvedRequest,
        settings: SearchSettings,
        prelude: Prelude,
        prefetch: Prefetch | None,
    ) -> None:
        self.session = session
        self.request = request
        self.resolved = resolved
        self.settings = settings
        self.stop_after = stop_after(request, settings)
        self.shuffle = random.shuffle if settings.randomize else None
        self.roots = prelude.roots
        self.all_sharing = prelude.sharing
        # Holders of the unsuffixed group's required traits, and which traits
        # each provider read so far has of them.
        self._holders = prelude.holders
        self._traits = TraitCompletion(session, prelude.holders)
        # The pages of a filter's members the windows are drawn from, if any.
        self._pages: MemberPages | None = None
        # Summaries read while the search runs (nested-aware, not shuffled).
        self.prefetch = prefetch
        # What the windows share: reads by group criteria and scope, tree
        # rules by sharing providers used, candidates found, roots seen.
        self._rows_by_criteria: dict[tuple[object, ...], Rows] = {}
        self._tree_rules: dict[frozenset[int], list[TreeRule]] = {}
        self._seen: set[tuple[object, ...]] = set()
        self._root_of: dict[int, int] = {}

    async def run(self) -> Found:
        """The candidates (to be called once)."""
        return Found(await self._candidates(), self._root_of)

    async def _candidates(self) -> list[Candidate]:
        stop_after = None if self.shuffle is not None else self.stop_after
        if self._holders.partial:
            await self._traits.complete_traits(self.all_sharing, self._pages)
        if stop_after is None:
            # Without a limit, or to shuffle every tree, one read covers everything.
            return await self._in_window(None, self.stop_after, None)
        policy = windowing.POLICY
        roots = self.anchors
        if roots is not None and policy.is_few(len(roots), stop_after):
            return await self._windowed(partial(_listed_trees, roots), policy, stop_after)
        if roots is None:
            self._pages = self._tree_trait_pages()
        trait_sets, aggregate_sets = self._filter_sets()
        if self._pages is None and (trait_sets or aggregate_sets):
            native_traits, native_aggregates = await native_filter_sets(
                self.resolved.groups,
                self.all_sharing,
                partial(self._group_rows, scope="sharing", few_filter=None),
            )
            if native_traits or native_aggregates:
                # A group no sharing provider can serve alone needs a provider
                # of the tree's own that passes its filters: the trees of the
                # narrowest such filter's members, page by page, are all there
                # is to read.
                self._pages = await narrowest_pages(
                    self.session,
                    native_traits,
                    native_aggregates,
                    up_to=policy.start(stop_after).size,
                )
            else:
                members = await lookups.member_counts(
                    self.session,
                    trait_sets,
                    aggregate_sets,
                    # A limit may be up to 19 digits; a count stops far below.
                    up_to=min(policy.few_per_candidate * stop_after, MemberPages.LARGEST_PAGE - 1),
                )
                few_filter = _few_filter(policy, stop_after, trait_sets, aggregate_sets, members)
                if few_filter is not None:
                    return await self._in_window(None, self.stop_after, few_filter)
        if self._pages is not None:
            return await self._windowed(self._pages, policy, stop_after)
        return await self._windowed(partial(_tree_range, *self.roots), policy, stop_after)

    def _filter_sets(self) -> tuple[list[frozenset[int]], list[frozenset[int]]]:
        """The trait sets of the granular groups and every group's aggregate
        sets, which the statements apply in SQL."""
        groups = self.resolved.groups
        trait_sets = [any_of for g in groups if g.granular for any_of in g.required]
        aggregate_sets = [any_of for g in groups for any_of in g.member_of]
        return trait_sets, aggregate_sets

    def _tree_trait_pages(self) -> MemberPages | None:
        """Trees taken page by page from the holders of the unsuffixed
        group's first tree trait set (when it has any, and the prelude's
        capped read did not find their holders few)."""
        tree_traits = [
            any_of
            for group in self.resolved.groups
            if not group.granular
            for any_of in self._tree_traits(group)
        ]
        if not tree_traits:
            return None
        first = self._holders.first_page(tree_traits[0])
        return MemberPages(self.session, "trait", tree_traits[0], first)

    async def _windowed(
        self,
        window_at: Callable[[int, int], Awaitable[Window | None]],
        policy: windowing.WindowPolicy,
        stop_after: int,
    ) -> list[Candidate]:
        """Candidates window by window: ``window_at(done, size)`` is the window
        of ``size`` trees (or members) after the first ``done``, or None past the last."""
        found: list[Candidate] = []
        progress = policy.start(stop_after)
        while not progress.complete:
            window = await window_at(progress.scanned, progress.size)
            if window is None:
                break
            more = await self._in_window(window, progress.still_wanted, None, progress.read_ahead)
            found += more
            progress = policy.after(progress, len(more))
        return found

    @cached_property
    def anchors(self) -> tuple[int, ...] | None:
        """The roots of the only trees that can anchor a candidate, in order,
        as far as the unsuffixed group's tree traits tell (a tree must hold
        one of each); None without tree traits whose holders were all read."""
        holding = [
            self._holders.roots_having(any_of)
            for group in self.resolved.groups
            if not group.granular
            for any_of in self._tree_traits(group)
            if self._holders.complete(any_of)
        ]
        return tuple(sorted(frozenset.intersection(*holding))) if holding else None

    async def _group_rows(
        self, group: ResolvedGroup, scope: RowScope, few_filter: FewFilter | None
    ) -> Rows:
        """Rows for a group; groups of the same criteria share one read."""
        key = (group.criteria, scope)
        if key not in self._rows_by_criteria:
            # A group without filters of its own reads every provider, however
            # narrow the other groups are.
            narrow = few_filter is not None and bool(group.required or group.member_of)
            if group.granular:
                found: Rows = await queries.granular_rows(
                    self.session, group, self.resolved, scope, narrow
                )
            else:
                # A list of roots was drawn from the tree traits' holders.
                tree_traits = [] if isinstance(scope, RootList) else self._tree_traits(group)
                found = await queries.unsuffixed_rows(
                    self.session, group, self.resolved, scope, tree_traits, narrow
                )
            self._rows_by_criteria[key] = found
        return self._rows_by_criteria[key]

    def _tree_traits(self, group: ResolvedGroup) -> list[frozenset[int]]:
        """The unsuffixed group's trait sets that no sharing provider can cover."""
        held = self._traits.provider_traits
        sharing_traits = frozenset().union(*(held.get(p, ()) for p in self.all_sharing))
        return [any_of for any_of in group.required if not any_of & sharing_traits]

    async def _rows(self, window: Window | None, few_filter: FewFilter | None) -> list[Rows] | None:
        """Each group's rows; None when some group has none."""
        rows: list[Rows] = []
        for group in self.resolved.groups:
            found = await self._group_rows(group, window, few_filter)
            if window is not None and self.all_sharing:
                # Sharing providers serve trees in every window: read them once.
                shared = await self._group_rows(group, "sharing", few_filter)
                native = [row for row in found if row[0] not in self.all_sharing]
                found = cast(Rows, shared + native)
            if not found:
                return None
            rows.append(found)
        return rows

    async def _in_window(
        self,
        window: Window | None,
        wanted: int | None,
        few_filter: FewFilter | None,
        ahead: bool = True,
    ) -> list[Candidate]:
        if ahead:
            await self._read_ahead(window, wanted, few_filter)
        rows = await self._rows(window, few_filter)
        if rows is None:
            return []
        if self._holders.partial:
            await self._traits.complete_traits(
                (row[0] for group_rows in rows for row in group_rows), self._pages
            )
        found = self._of_single_providers(rows, window, wanted)
        if found is not None:
            return found
        sharing, tree_rules = await self._sharing_for(rows, window)
        root_of = {row[0]: row[1] for group_rows in rows for row in group_rows}
        self._root_of.update(root_of)
        rules = await self._search_rules(root_of, sharing.providers)
        plans = [
            group_plan(group, group_rows, sharing, rule, window)
            for group, group_rows, rule in zip(self.resolved.groups, rows, tree_rules, strict=True)
        ]
        anchors = set(plans[0].options).intersection(*(plan.options for plan in plans[1:]))
        order = sorted(a for a in anchors if window is None or a in window)
        if self.shuffle is not None:
            self.shuffle(order)
        steps = search_steps(
            plans, rules, order, stop_after=wanted, shuffle=self.shuffle, seen=self._seen
        )
        return await pacing.gather(steps, self.settings.slice_seconds)

    def _of_single_providers(
        self, rows: list[Rows], window: Window | None, wanted: int | None
    ) -> list[Candidate] | None:
        """Candidates found without options or a walk, when the request is
        one unsuffixed group, no sharing provider or shuffling can mix
        trees, and each tree of the rows is a single provider."""
        (group, *others) = self.resolved.groups
        if others or group.granular or self.all_sharing or self.shuffle is not None:
            return None
        found = single_provider_search(
            unsuffixed_plan(group),
            cast(list[tuple[int, int, int]], rows[0]),
            self._traits.provider_traits,
            window,
            stop_after=wanted,
        )
        if found is not None:
            self._root_of.update((c.chosen[0], c.chosen[0]) for c in found)
        return found

    async def _read_ahead(
        self, window: Window | None, wanted: int | None, few_filter: FewFilter | None
    ) -> None:
        """Start reading the summaries of the trees the window's search tries
        first (one candidate each, when ``wanted``) while its rows are read
        and the search runs; without a window, of the first trees a narrow
        filter leaves or, with none, of every tree."""
        if self.prefetch is None:
            return
        if isinstance(window, RootList):
            await self.prefetch.start(window.roots[:wanted])
        elif isinstance(window, RootWindow):
            last = window.last if wanted is None else min(window.last, window.first + wanted - 1)
            await self.prefetch.start(range(window.first, last + 1))
        elif few_filter is not None:
            # The trees of the providers the filter leaves, one candidate each.
            assert wanted is not None
            # A limit may be up to 19 digits; SQL takes an int4 there.
            most = min(wanted, MemberPages.LARGEST_PAGE)
            await self.prefetch.start_first_trees(*few_filter, most)
        else:
            await self.prefetch.start(self.anchors)

    async def _sharing_for(
        self, rows: list[Rows], window: Window | None
    ) -> tuple[SharingMap, list[TreeRule]]:
        """The sharing providers the rows name, the trees of the window they
        serve, and the groups' tree rules."""
        all_sharing = self.all_sharing
        used = frozenset(
            row[0] for group in rows if all_sharing for row in group if row[0] in all_sharing
        )
        if used not in self._tree_rules:
            self._tree_rules[used] = await tree_rules(self.session, self.resolved, used)
        sharing = await sharing_map(self.session, used, window)
        return sharing, self._tree_rules[used]

    async def _search_rules(self, root_of: dict[int, int], sharing: frozenset[int]) -> SearchRules:
        seen: set[int] = set()
        shared_classes: set[int] = set()
        for group in self.resolved.groups:
            shared_classes |= seen & group.amounts.keys()
            seen |= group.amounts.keys()
        headroom = {}
        if shared_classes:
            headroom = await lookups.headroom(self.session, shared_classes, root_of)
        parent_of = {}
        if self.request.same_subtrees:
            parent_of = await lookups.parents_in_trees(self.session, set(root_of.values()))
        return SearchRules(
            isolate=self.request.isolate,
            same_subtrees=self.request.same_subtrees,
            nested_aware=self.request.nested_aware,
            headroom=headroom,
            provider_traits=self._traits.provider_traits,
            root_of=root_of,
            parent_of=parent_of,
            sharing=sharing,
        )
