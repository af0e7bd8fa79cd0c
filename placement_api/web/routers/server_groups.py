"""Server groups, an extension of this service (every microversion): a claim that
names a group keeps its rule (see ``allocations``); this shows the group."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import server_group as policies
from placement_api.domain import server_groups
from placement_api.domain.claims import normalize_uuid
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import allocations as schemas
from placement_api.web.schemas.validation import load_query

router = APIRouter(tags=["server_groups"], route_class=PlacementRoute)


@router.get(
    "/server_groups/{uuid}",
    operation_id="showServerGroup",
    description=(
        "The group's rule and its members, each with the hosts (root providers) it holds "
        "allocations on. 404 until a claim names the group. See docs/server-groups.md."
    ),
    responses={200: {"model": schemas.ServerGroupView}},
)
async def show_server_group(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.SHOW)
    async with db.read() as session:
        group = await server_groups.show(session, normalize_uuid(uuid))
    return json_response(api.version, render(group))


@router.get(
    "/server_groups",
    operation_id="listServerGroups",
    description=(
        "The server groups `member` (a consumer uuid) belongs to, each as "
        "GET /server_groups/{uuid} shows it. See docs/server-groups.md."
    ),
    responses={200: {"model": schemas.ServerGroupsView}},
)
async def list_server_groups(api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.LIST)
    query = load_query(schemas.ServerGroupsQuery, dict(api.request.query_params))
    async with db.read() as session:
        groups = await server_groups.of_member(session, normalize_uuid(query.member))
    return json_response(api.version, {"server_groups": [render(g) for g in groups]})


def render(group: server_groups.GroupView) -> dict[str, Any]:
    return {
        "uuid": group.uuid,
        "policy": group.policy,
        "max_server_per_host": group.max_server_per_host,
        "members": group.members,
    }
