"""Find allocation candidates: read the prelude and resolve names, search
window by window (``windows``), summarise the providers of the candidates.

Summaries are by tree: those of the trees tried first are read ahead, on a
second connection, while the search runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.second_connection import SecondConnection
from placement_api.domain.candidates import lookups
from placement_api.domain.candidates.combinations import Candidate, providers_of
from placement_api.domain.candidates.names import resolve
from placement_api.domain.candidates.prefetch import Prefetch
from placement_api.domain.candidates.prelude import read_prelude
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.domain.candidates.search_settings import SearchSettings, holder_cap
from placement_api.domain.candidates.summaries import ProviderSummary, load_summaries
from placement_api.domain.candidates.summary_rows import SummaryScope
from placement_api.domain.candidates.windows import Finder


@dataclass(frozen=True)
class CandidatesResult:
    candidates: list[Candidate] = field(default_factory=list)
    summaries: dict[int, ProviderSummary] = field(default_factory=dict)
    uuids: dict[int, str] = field(default_factory=dict)
    class_names: dict[int, str] = field(default_factory=dict)


async def _with_mapped(
    session: AsyncSession, candidates: list[Candidate], uuids: dict[int, str]
) -> dict[int, str]:
    """``uuids`` and those of providers named only in mappings (resourceless
    groups), which may lie outside the summaries."""
    missing = {p for c in candidates for ps in c.mappings.values() for p in ps} - uuids.keys()
    if missing:
        uuids = {**uuids, **await lookups.uuids_of(session, missing)}
    return uuids


async def find_candidates(
    session: AsyncSession,
    request: CandidateRequest,
    settings: SearchSettings,
    second: SecondConnection | None,
) -> CandidatesResult:
    """``second``: the unit of work's second connection, to read summaries
    ahead on (None: read after the search)."""
    prelude = await read_prelude(session, request, holder_cap(request, settings))
    resolved = resolve(request, prelude.ids)
    if resolved is None:
        return CandidatesResult()
    scope = SummaryScope(
        ids=frozenset(),
        whole_trees=request.nested_aware,
        class_ids=None if settings.all_classes else frozenset(resolved.class_names),
        with_traits=settings.with_traits,
    )
    # Summaries are by tree, read ahead for the trees tried first in order.
    ahead = request.nested_aware and not settings.randomize
    prefetch = (
        Prefetch(second, scope, prelude.estimated_providers)
        if ahead and second is not None
        else None
    )
    try:
        finder = Finder(session, request, resolved, settings, prelude, prefetch)
        candidates, root_of = await finder.run()
        if not candidates:
            return CandidatesResult()
        used = providers_of(candidates)
        if request.nested_aware:
            used = {root_of[p] for p in used}
        summaries = await load_summaries(
            session, replace(scope, ids=frozenset(used)), prelude.estimated_providers, prefetch
        )
    finally:
        if prefetch is not None:
            await prefetch.close()
    uuids = summaries.uuids
    if any(not g.amounts for g in resolved.groups):
        uuids = await _with_mapped(session, candidates, uuids)
    return CandidatesResult(
        candidates=candidates,
        summaries=summaries.providers,
        uuids=uuids,
        class_names=resolved.class_names,
    )
