"""Routes for /resource_providers/{uuid}/usages and /usages."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import usage as policies
from placement_api.domain import providers, usages
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import usages as schemas
from placement_api.web.schemas.validation import load_query

router = APIRouter(tags=["usages"], route_class=PlacementRoute)


@router.get(
    "/resource_providers/{uuid}/usages",
    operation_id="showProviderUsages",
    responses={200: {"model": schemas.ProviderUsages}},
)
async def show_provider_usages(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.PROVIDER_USAGES)
    async with db.read() as session:
        provider = await providers.get(session, uuid)
        amounts = await usages.of_provider(session, provider.id)
    # Usage is "now"; there is no meaningful last-modified time (json_response uses now).
    return json_response(
        api.version, {"resource_provider_generation": provider.generation, "usages": amounts}
    )


@router.get(
    "/usages",
    operation_id="showTotalUsages",
    responses={200: {"model": schemas.TotalUsages}},
)
async def show_total_usages(api: ApiDep, db: DbDep) -> Response:
    api.require("usages_by_project")
    params = api.request.query_params
    # The target is the project asked about, so a project reader may see its own totals.
    api.authorize(policies.TOTAL_USAGES, {"project_id": params.get("project_id")})
    query = load_query(schemas.usages_query_schema(api.version), dict(params))
    body: dict[str, Any]
    async with db.read() as session:
        if isinstance(query, schemas.UsagesQuery1_38):
            groups = await usages.of_project_by_type(
                session, query.project_id, query.user_id, query.consumer_type
            )
            body = {
                name: {"consumer_count": group.consumer_count, **group.amounts}
                for name, group in groups.items()
            }
        else:
            body = await usages.of_project(session, query.project_id, query.user_id)
    return json_response(api.version, {"usages": body})
