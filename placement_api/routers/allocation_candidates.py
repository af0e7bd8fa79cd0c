"""Route for GET /allocation_candidates (microversion 1.10 and later)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api import errors
from placement_api.deps import ApiDep, DbDep
from placement_api.domain.candidates.request import parse_request
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

_DESCRIPTION = """\
Ways to meet a resource request, ready to use as PUT /allocations bodies, with
a summary of every provider involved.

Query keys: `resources`, `required` (traits; `!` forbids from 1.22, `in:` any-of
and repeats from 1.39), `member_of` (1.21; repeats AND from 1.24; `!`/`!in:`
from 1.32), `in_tree` (1.31), each also with a group suffix from 1.25 (numbers)
or 1.33 (strings); `limit` (1.16), `group_policy` (`none`/`isolate`, needed with
more than one suffixed group), `root_required` (1.35), `same_subtree` (1.36).
"""


def _resources(amounts: dict[int, int], names: dict[int, str]) -> dict[str, int]:
    return {names[class_id]: amount for class_id, amount in sorted(amounts.items())}


def _allocation_requests(result: CandidatesResult, version: Version) -> list[dict[str, Any]]:
    names, uuids = result.class_names, result.uuids
    if not version.has("allocations_dict_format"):
        return [
            {
                "allocations": [
                    {"resource_provider": {"uuid": uuids[p]}, "resources": _resources(a, names)}
                    for p, a in candidate.allocations.items()
                ]
            }
            for candidate in result.candidates
        ]
    requests = []
    for candidate in result.candidates:
        body: dict[str, Any] = {
            "allocations": {
                uuids[p]: {"resources": _resources(a, names)}
                for p, a in candidate.allocations.items()
            }
        }
        if version.has("candidates_mappings"):
            body["mappings"] = {
                suffix: [uuids[p] for p in providers]
                for suffix, providers in candidate.mappings.items()
            }
        requests.append(body)
    return requests


def _provider_summaries(result: CandidatesResult, version: Version) -> dict[str, Any]:
    summaries: dict[str, Any] = {}
    for summary in result.summaries.values():
        entry: dict[str, Any] = {
            "resources": {
                name: {"capacity": capacity, "used": used}
                for name, (capacity, used) in summary.resources.items()
            }
        }
        if version.has("candidates_required"):
            entry["traits"] = summary.traits
        if version.has("candidates_nested"):
            entry["parent_provider_uuid"] = summary.parent_uuid
            entry["root_provider_uuid"] = summary.root_uuid
        summaries[summary.uuid] = entry
    return summaries


@router.get(
    "/allocation_candidates",
    operation_id="listAllocationCandidates",
    description=_DESCRIPTION,
    responses={200: {"model": schemas.AllocationCandidates}},
)
async def list_allocation_candidates(api: ApiDep, db: DbDep) -> Response:
    if not api.version.has("allocation_candidates"):
        raise errors.NotFound("The resource could not be found.")
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
    async with db.read() as session:
        result = await find_candidates(session, request, settings)
    body = {
        "allocation_requests": _allocation_requests(result, api.version),
        "provider_summaries": _provider_summaries(result, api.version),
    }
    return json_response(api.version, body)
