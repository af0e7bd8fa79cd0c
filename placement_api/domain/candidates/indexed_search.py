"""Candidates from the worker's provider index, without reading the
database, for a request of one unsuffixed group with resources, not
shuffled, without ``same_subtree``. A flat cloud (every tree a single
provider, none sharing) is answered here, as the flat-cloud shortcut
(``single_provider``) answers it; any other by ``indexed_trees``. Anything
else, or a name the index does not know (its error is the database path's
to give), is None: the caller reads the database. The answer is the one
that path gives: the same capacity test and filters, trees in root id
order, the same summaries.
"""

from __future__ import annotations

from collections.abc import Callable

from placement_api.domain.candidates.combinations import Candidate, Layouts
from placement_api.domain.candidates.indexed_provider import IndexedProvider
from placement_api.domain.candidates.indexed_summaries import summaries_of
from placement_api.domain.candidates.indexed_trees import tree_candidates
from placement_api.domain.candidates.names import KnownIds, ResolvedGroup, ResolvedRequest, resolve
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.domain.candidates.search_settings import SearchSettings, stop_after
from placement_api.domain.candidates.service import CandidatesResult
from placement_api.domain.candidates.summary_rows import FilterKind


def _known_ids(index: ProviderIndex, request: CandidateRequest) -> KnownIds | None:
    """The ids ``resolve`` looks names up in; None when a class or trait the
    request names is unknown to the index."""
    names = index.names
    (group,) = request.groups
    classes = {name: names.classes[name] for name in group.resources if name in names.classes}
    wanted_traits = {
        *request.root_required,
        *request.root_forbidden,
        *group.required.forbidden,
        *(name for any_of in group.required.any_of for name in any_of),
    }
    if len(classes) < len(group.resources) or not wanted_traits <= names.traits.keys():
        return None
    root = None if group.in_tree is None else index.tree_of(group.in_tree)
    trees = {} if group.in_tree is None or root is None else {group.in_tree: root}
    return KnownIds(classes, names.traits, names.aggregates, trees)


def _scanned(index: ProviderIndex, group: ResolvedGroup) -> list[IndexedProvider]:
    """The fewest providers in order that hold every candidate: the root
    ``in_tree`` names, the holders of one required trait set, the members
    of one aggregate set, or all."""
    if group.tree_root is not None:
        root = index.providers.get(group.tree_root)
        return [] if root is None else [root]
    filters: list[tuple[FilterKind, frozenset[int]]] = [
        *(("trait", any_of) for any_of in group.required),
        *(("aggregate", any_of) for any_of in group.member_of),
    ]
    if not filters:
        return index.in_order()
    return index.in_order(*min(filters, key=lambda f: index.count(*f)))


def _tree_filter(
    group: ResolvedGroup, request: ResolvedRequest
) -> Callable[[IndexedProvider], bool] | None:
    """The filters ``provider_filters`` and the group statement apply
    besides capacity, for a provider that is its own tree; None when there
    are none."""
    forbidden, outside = group.forbidden | request.root_forbidden, group.forbidden_aggregates
    root_required, member_of, required = request.root_required, group.member_of, group.required
    if not (forbidden or outside or root_required or member_of or required):
        return None

    # isdisjoint, not &: it builds no set, and this runs once per provider.
    def passes(provider: IndexedProvider) -> bool:
        traits, aggregates = provider.traits, provider.aggregates
        if not (forbidden.isdisjoint(traits) and outside.isdisjoint(aggregates)):
            return False
        if not root_required <= traits:
            return False
        for any_of in member_of:
            if any_of.isdisjoint(aggregates):
                return False
        for any_of in required:  # noqa: SIM110 (a generator costs a third more)
            if any_of.isdisjoint(traits):
                return False
        return True

    return passes


def _chosen(
    index: ProviderIndex, group: ResolvedGroup, request: ResolvedRequest, most: int | None
) -> list[IndexedProvider]:
    """The providers that meet the group, in id order, up to ``most``."""
    # ``fits_clause``'s test on a row's least, most and step_size (``Stock``),
    # by index: this loop runs once per provider scanned.
    amounts = sorted(group.amounts.items())
    passes = _tree_filter(group, request)
    chosen: list[IndexedProvider] = []
    for provider in _scanned(index, group):
        stocks = provider.stocks
        for class_id, amount in amounts:
            stock = stocks.get(class_id)
            if (
                stock is None
                or not stock[3] <= amount <= stock[4]
                or (stock[5] != 1 and amount % stock[5])
            ):
                break
        else:
            if passes is None or passes(provider):
                chosen.append(provider)
                if most is not None and len(chosen) >= most:
                    break
    return chosen


def _eligible(request: CandidateRequest, settings: SearchSettings) -> bool:
    if settings.randomize or len(request.groups) != 1 or request.same_subtrees:
        return False
    (group,) = request.groups
    return not group.granular and bool(group.resources)


async def from_index(
    index: ProviderIndex, request: CandidateRequest, settings: SearchSettings
) -> CandidatesResult | None:
    """The answer from the index brought up to date, or None when the
    database must give it."""
    if not _eligible(request, settings):
        return None
    async with index.reading() as current:
        return None if current is None else await _answer(current, request, settings)


async def _answer(
    index: ProviderIndex, request: CandidateRequest, settings: SearchSettings
) -> CandidatesResult | None:
    """The answer from a current index, or None when the database must give it."""
    ids = _known_ids(index, request)
    if ids is None:
        return None
    resolved = resolve(request, ids)
    if resolved is None:
        return CandidatesResult()
    most = stop_after(request, settings)
    if not index.flat:
        return await tree_candidates(index, request, resolved, settings, most)
    (group,) = resolved.groups
    chosen = _chosen(index, group, resolved, most) if most is None or most > 0 else []
    if not chosen:
        return CandidatesResult()
    width = len(group.amounts)
    layout = (
        Layouts([(group.suffix, ((c, a),)) for c, a in sorted(group.amounts.items())])
        .candidate((chosen[0].id,) * width)
        .layout
    )
    summaries = summaries_of(index, (p.id for p in chosen), settings, group.amounts.keys())
    if summaries is None:
        return None
    return CandidatesResult(
        candidates=[Candidate((p.id,) * width, layout) for p in chosen],
        summaries=summaries,
        uuids={p.id: p.uuid for p in chosen},
        class_names=resolved.class_names,
    )
