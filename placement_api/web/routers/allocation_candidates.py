"""Route for GET /allocation_candidates (microversion 1.10 and later)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import allocation_candidate as policies
from placement_api.domain.candidates.indexed_search import from_index
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.domain.candidates.search_settings import SearchSettings
from placement_api.domain.candidates.service import CandidatesResult, find_candidates
from placement_api.microversion import Version
from placement_api.observability.metrics import CANDIDATES, CANDIDATES_ANSWERED
from placement_api.serving.gc_policy import collector_paused
from placement_api.web.candidates_query import parse_request
from placement_api.web.candidates_rendering import answer_text
from placement_api.web.deps import ApiDep, DbDep, services
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import EncodedJsonResponse, json_response
from placement_api.web.schemas import allocation_candidates as schemas
from placement_api.web.schemas.validation import load_query

router = APIRouter(tags=["allocation_candidates"], route_class=PlacementRoute)

_DESCRIPTION = (
    "Ways to meet a resource request, each ready to use as a PUT /allocations body, "
    "with a summary of every provider involved. From 1.25 the keys `resources`, "
    "`required`, `member_of` and (from 1.31) `in_tree` may carry a group suffix: a "
    "number, or from 1.33 a string of 1-64 characters `[a-zA-Z0-9_-]`; each suffixed "
    "group is met by one provider."
)
# The query parameters are documented from the query models (placement_api.openapi.query).


def _provider_summaries(result: CandidatesResult, version: Version) -> bytes:
    # Summaries run to tens of thousands: from 1.29 they are encoded as they
    # are; older versions show fewer fields (traits came in 1.17).
    uuids, summaries = result.uuids, result.summaries
    shown: dict[str, Any]
    if version.has("candidates_nested"):
        shown = {uuids[ident]: summary for ident, summary in summaries.items()}
    elif version.has("candidates_required"):
        shown = {
            uuids[ident]: {"resources": s.resources, "traits": s.traits}
            for ident, s in summaries.items()
        }
    else:
        shown = {uuids[ident]: {"resources": s.resources} for ident, s in summaries.items()}
    return orjson.dumps(shown)


@router.get(
    "/allocation_candidates",
    operation_id="listAllocationCandidates",
    description=_DESCRIPTION,
    responses={200: {"model": schemas.AllocationCandidates}},
)
async def list_allocation_candidates(api: ApiDep, db: DbDep) -> Response:
    api.require("allocation_candidates")
    api.authorize(policies.LIST)
    params = api.request.query_params
    load_query(schemas.query_schema(api.version), dict(params))
    request = parse_request(params.multi_items(), api.version)
    settings = SearchSettings(
        randomize=api.settings.randomize_allocation_candidates,
        max_candidates=api.settings.max_allocation_candidates,
        slice_seconds=api.settings.candidates_slice_seconds,
        all_classes=api.version.has("summaries_all_classes"),
        with_traits=api.version.has("candidates_required"),
    )
    # The answer's objects die with _answer's frame, before the collector
    # resumes: alive, they would all be scanned by its first pass.
    index = services(api.request).candidates_index
    with collector_paused():
        return await _answer(db, index, request, settings, api.version)


async def _answer(
    db: DbDep,
    index: ProviderIndex | None,
    request: CandidateRequest,
    settings: SearchSettings,
    version: Version,
) -> Response:
    result = None if index is None else await from_index(index, request, settings)
    if result is None:
        unit = db.read()
        async with unit as session:
            result = await find_candidates(session, request, settings, unit.second_connection())
        CANDIDATES_ANSWERED.labels("database").inc()
    else:
        CANDIDATES_ANSWERED.labels("index").inc()
    CANDIDATES.observe(len(result.candidates))
    summaries = _provider_summaries(result, version)
    text = answer_text(result.candidates, result.uuids, result.class_names, summaries, version)
    return json_response(version, text, response_class=EncodedJsonResponse)
