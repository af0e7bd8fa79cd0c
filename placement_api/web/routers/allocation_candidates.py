"""Route for GET /allocation_candidates (microversion 1.10 and later)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter
from starlette.responses import JSONResponse, Response

from placement_api.auth.policies import allocation_candidate as policies
from placement_api.domain.candidates.combinations import Layout
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.domain.candidates.service import CandidatesResult, find_candidates
from placement_api.domain.candidates.windows import SearchSettings
from placement_api.microversion import Version
from placement_api.observability.metrics import CANDIDATES
from placement_api.serving.gc_policy import collector_paused
from placement_api.web.candidates_query import parse_request
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
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


class OrjsonResponse(JSONResponse):
    """Candidate lists run to megabytes: orjson encodes them several times faster."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class _Rendered:
    """The parts of candidates that repeat, rendered once.

    A search shares one layout among all candidates whose slots share
    providers alike, and
    one amounts dict per provider slot of it, so tens of thousands of
    candidates repeat a few of each: their ``{"resources": ...}`` bodies are
    made once per amounts dict (the encoder takes shared objects). Layouts
    and amounts dicts stay alive (held by the candidates) while the answer
    is built, so no identity is reused.
    """

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.bodies: dict[int, dict[str, dict[str, int]]] = {}
        self.layouts: dict[int, tuple[tuple[int, dict[str, dict[str, int]]], ...]] = {}

    def body(self, amounts: dict[int, int]) -> dict[str, dict[str, int]]:
        found = self.bodies.get(id(amounts))
        if found is None:
            names = self.names
            resources = {names[c]: amounts[c] for c in sorted(amounts)}
            found = self.bodies[id(amounts)] = {"resources": resources}
        return found

    def held(self, layout: Layout) -> tuple[tuple[int, dict[str, dict[str, int]]], ...]:
        """Per provider allocated: its slot, and its body."""
        found = self.layouts.get(id(layout))
        if found is None:
            found = tuple((slot, self.body(amounts)) for slot, amounts in layout.held)
            self.layouts[id(layout)] = found
        return found


def _allocation_requests(result: CandidatesResult, version: Version) -> list[dict[str, Any]]:
    uuids, rendered = result.uuids, _Rendered(result.class_names)
    if not version.has("allocations_dict_format"):
        return [
            {
                "allocations": [
                    {"resource_provider": {"uuid": uuids[chosen[slot]]}, **body}
                    for slot, body in rendered.held(layout)
                ]
            }
            for chosen, layout in result.candidates
        ]
    if not version.has("candidates_mappings"):
        return [
            {"allocations": {uuids[chosen[slot]]: body for slot, body in rendered.held(layout)}}
            for chosen, layout in result.candidates
        ]
    return [
        {
            "allocations": {uuids[chosen[slot]]: body for slot, body in rendered.held(layout)},
            "mappings": {
                suffix: [uuids[chosen[slot]] for slot in slots] for suffix, slots in layout.mapped
            },
        }
        for chosen, layout in result.candidates
    ]


def _provider_summaries(result: CandidatesResult, version: Version) -> dict[str, Any]:
    # Summaries run to tens of thousands: from 1.29 they are encoded as they
    # are; older versions show fewer fields (traits came in 1.17).
    uuids, summaries = result.uuids, result.summaries
    if version.has("candidates_nested"):
        return {uuids[ident]: summary for ident, summary in summaries.items()}
    if version.has("candidates_required"):
        return {
            uuids[ident]: {"resources": s.resources, "traits": s.traits}
            for ident, s in summaries.items()
        }
    return {uuids[ident]: {"resources": s.resources} for ident, s in summaries.items()}


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
    with collector_paused():
        return await _answer(db, request, settings, api.version)


async def _answer(
    db: DbDep, request: CandidateRequest, settings: SearchSettings, version: Version
) -> Response:
    unit = db.read()
    async with unit as session:
        result = await find_candidates(session, request, settings, unit.second_connection())
    requests = _allocation_requests(result, version)
    CANDIDATES.observe(len(requests))
    body = {
        "allocation_requests": requests,
        "provider_summaries": _provider_summaries(result, version),
    }
    return json_response(version, body, response_class=OrjsonResponse)
