"""Route for GET /allocation_candidates (microversion 1.10 and later)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from fastapi import APIRouter
from starlette.responses import JSONResponse, Response

from placement_api.deps import ApiDep, DbDep
from placement_api.domain.candidates.collector import collector_paused
from placement_api.domain.candidates.request import CandidateRequest, parse_request
from placement_api.domain.candidates.service import (
    CandidatesResult,
    SearchSettings,
    find_candidates,
)
from placement_api.microversion import Version
from placement_api.policies import allocation_candidate as policies
from placement_api.rendering import json_response
from placement_api.schemas import allocation_candidates as schemas
from placement_api.schemas.validation import load_query

router = APIRouter(tags=["allocation_candidates"])

_DESCRIPTION = (
    "Ways to meet a resource request, each ready to use as a PUT /allocations body, "
    "with a summary of every provider involved. From 1.25 the keys `resources`, "
    "`required`, `member_of` and (from 1.31) `in_tree` may carry a group suffix: a "
    "number, or from 1.33 a string of 1-64 characters `[a-zA-Z0-9_-]`; each suffixed "
    "group is met by one provider."
)


def _query_parameter(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": "string"}}  # fmt: skip


_PARAMETERS = [
    _query_parameter("resources", "`CLASS:AMOUNT,...`; required before 1.25."),
    _query_parameter(
        "required",
        "Traits (1.17); `!TRAIT` forbids (1.22); `in:A,B` any of "
        "and repeated keys AND together (1.39).",
    ),
    _query_parameter(
        "member_of",
        "Aggregate uuid or `in:uuid,...` (1.21); repeated keys "
        "AND together (1.24); `!uuid`/`!in:...` forbid (1.32).",
    ),
    _query_parameter("in_tree", "A provider uuid: only its tree serves the group (1.31)."),
    _query_parameter("limit", "Most candidates returned (1.16)."),
    _query_parameter(
        "group_policy", "`none` or `isolate` (1.25); needed with two or more suffixed groups."
    ),
    _query_parameter(
        "root_required",
        "Traits the root of each candidate's tree must have (or, with `!`, lack) (1.35).",
    ),
    _query_parameter(
        "same_subtree",
        "Comma-separated group suffixes whose providers must "
        "share one subtree (1.36); resourceless groups need one.",
    ),
]


class OrjsonResponse(JSONResponse):
    """Candidate lists run to megabytes: orjson encodes them several times faster."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class _ResourcesBodies(dict[int, dict[str, dict[str, int]]]):
    """``{"resources": {class name: amount}}`` by the identity of an amounts dict.

    The search shares one amounts dict among all candidates of the same shape,
    so tens of thousands of allocations repeat a few dicts, and the encoder
    takes shared objects. Every amounts dict stays alive (held by the
    candidates) while the bodies are built, so no identity is reused.
    """

    def __init__(self, names: dict[int, str]) -> None:
        super().__init__()
        self.names = names

    def add(self, amounts: Iterable[dict[int, int]]) -> None:
        names = self.names
        for held in amounts:
            if id(held) not in self:
                self[id(held)] = {"resources": {names[c]: held[c] for c in sorted(held)}}

    def by_uuid(
        self, allocations: dict[int, dict[int, int]], uuids: dict[int, str]
    ) -> dict[str, dict[str, dict[str, int]]]:
        try:
            return {uuids[p]: self[id(held)] for p, held in allocations.items()}
        except KeyError:  # amounts not seen before: once per shape of candidate
            self.add(allocations.values())
            return {uuids[p]: self[id(held)] for p, held in allocations.items()}


def _allocation_requests(result: CandidatesResult, version: Version) -> list[dict[str, Any]]:
    uuids, bodies = result.uuids, _ResourcesBodies(result.class_names)
    if not version.has("allocations_dict_format"):
        bodies.add(a for c in result.candidates for a in c.allocations.values())
        return [
            {
                "allocations": [
                    {"resource_provider": {"uuid": uuids[p]}, **bodies[id(a)]}
                    for p, a in candidate.allocations.items()
                ]
            }
            for candidate in result.candidates
        ]
    if not version.has("candidates_mappings"):
        return [
            {"allocations": bodies.by_uuid(candidate.allocations, uuids)}
            for candidate in result.candidates
        ]
    return [
        {
            "allocations": bodies.by_uuid(allocations, uuids),
            "mappings": {suffix: [uuids[p] for p in ps] for suffix, ps in mappings.items()},
        }
        for allocations, mappings in result.candidates
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
    openapi_extra={"parameters": _PARAMETERS},
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
    async with db.read() as session:
        result = await find_candidates(session, request, settings)
    body = {
        "allocation_requests": _allocation_requests(result, version),
        "provider_summaries": _provider_summaries(result, version),
    }
    return json_response(version, body, response_class=OrjsonResponse)
