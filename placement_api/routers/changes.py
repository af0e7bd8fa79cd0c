"""GET /changes: the change feed, an extension of this service (every microversion)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.deps import ApiDep, services
from placement_api.policies import change as policies
from placement_api.rendering import json_response
from placement_api.schemas import changes as schemas
from placement_api.schemas.validation import load_query

router = APIRouter(tags=["changes"])


@router.get(
    "/changes",
    operation_id="listChanges",
    description=(
        "The changes committed after index `since`, oldest first: `index` is the feed's "
        "latest index, so a client resumes from the last change's index (or from `index` "
        "when none came). With `wait`, an answer with no change is held until one commits "
        "(or `wait` seconds pass). 410 `placement.changes.gone`: the changes after `since` "
        "were pruned (or `since` is beyond the feed); re-read what you follow, then resume "
        "from the error's `index`. See docs/changes.md."
    ),
    responses={
        200: {"model": schemas.ChangeList},
        410: {"description": "The changes after `since` are no longer kept."},
    },
    openapi_extra={"parameters": schemas.query_parameters(schemas.ChangesQuery)},
)
async def list_changes(api: ApiDep) -> Response:
    api.authorize(policies.LIST)
    query = load_query(schemas.ChangesQuery, dict(api.request.query_params))
    feed = services(api.request).change_feed
    page = await feed.follow(query.since, query.limit, query.wait)
    return json_response(api.version, {"index": page.index, "changes": page.changes})
