"""Host heartbeats, an extension of this service (every microversion): a host's
agent says it is alive (and how busy it is); schedulers list who is."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import heartbeat as policies
from placement_api.domain import heartbeats
from placement_api.domain.heartbeats import Heartbeat
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import UtcJsonResponse, json_response
from placement_api.web.schemas import heartbeats as schemas
from placement_api.web.schemas.common import request_body
from placement_api.web.schemas.validation import load_body, load_query

router = APIRouter(tags=["heartbeats"], route_class=PlacementRoute)


def render(beat: Heartbeat) -> dict[str, Any]:
    """Times stay datetimes: ``UtcJsonResponse`` writes them as RFC 3339 UTC."""
    return {
        "resource_provider_uuid": beat.provider_uuid,
        "last_seen": beat.last_seen,
        "interval": beat.interval,
        "down_after": beat.down_after,
        "metrics": beat.metrics,
        "metrics_at": beat.metrics_at,
    }


@router.put(
    "/resource_providers/{uuid}/heartbeat",
    operation_id="updateResourceProviderHeartbeat",
    description=(
        "The host (a root provider) is alive and will report again within `interval` "
        "seconds. Moves no generation and is not a change-feed entry. 400 for a child "
        "provider. See docs/liveness.md."
    ),
    responses={200: {"model": schemas.Heartbeat}},
    openapi_extra=request_body(schemas.HeartbeatUpdate),
)
async def update_heartbeat(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.UPDATE)
    raw = await api.body()
    schemas.check_metric_count(raw, api.settings)
    body = load_body(schemas.HeartbeatUpdate, raw)
    if body.metrics is not None:
        schemas.check_metric_limits(body.metrics, api.settings)
    async with db.write() as session:
        beat = await heartbeats.record(
            session, uuid, body.interval, body.metrics, api.settings.heartbeat_missed_intervals
        )
    return json_response(
        api.version, render(beat), last_modified=beat.last_seen, response_class=UtcJsonResponse
    )


@router.get(
    "/heartbeats",
    operation_id="listHeartbeats",
    description=(
        "The last heartbeat of every host that sent one, with `alive` judged at `now` "
        "(the server's clock). Hosts that never sent one are absent: their liveness is "
        "unknown. See docs/liveness.md."
    ),
    responses={200: {"model": schemas.HeartbeatList}},
)
async def list_heartbeats(api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.LIST)
    query = load_query(schemas.HeartbeatsQuery, dict(api.request.query_params))
    alive = None if query.alive is None else query.alive == "true"
    async with db.read() as session:
        listed = await heartbeats.list_all(
            session, api.settings.heartbeat_missed_intervals, alive=alive, in_tree=query.in_tree
        )
    body = {
        "now": listed.now,
        "heartbeats": [
            {**render(entry.heartbeat), "name": entry.name, "alive": entry.alive}
            for entry in listed.heartbeats
        ],
    }
    return json_response(api.version, body, response_class=UtcJsonResponse)
