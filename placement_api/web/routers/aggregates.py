"""Routes for /resource_providers/{uuid}/aggregates (microversion 1.1+)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import aggregate as policies
from placement_api.domain import aggregates, providers
from placement_api.microversion import Version
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import aggregates as schemas
from placement_api.web.schemas.common import request_body

router = APIRouter(tags=["aggregates"], route_class=PlacementRoute)

_PATH = "/resource_providers/{uuid}/aggregates"


def _render(version: Version, uuids: list[str], generation: int) -> Response:
    body: dict[str, Any] = {"aggregates": uuids}
    if version.has("aggregates_generation"):
        body["resource_provider_generation"] = generation
    # Association times are not recorded, so (as upstream) last-modified is "now".
    return json_response(version, body)


@router.get(
    _PATH,
    operation_id="listResourceProviderAggregates",
    responses={200: {"model": schemas.ProviderAggregates}},
)
async def list_provider_aggregates(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.require("aggregates")
    api.authorize(policies.LIST)
    async with db.read() as session:
        provider = await providers.get(session, uuid)
        uuids = await aggregates.provider_aggregates(session, provider.id)
    return _render(api.version, uuids, provider.generation)


@router.put(
    _PATH,
    operation_id="updateResourceProviderAggregates",
    responses={200: {"model": schemas.ProviderAggregates}},
    openapi_extra=request_body(
        schemas.AggregateList,
        schemas.AggregatesUpdate,
        description="AggregateList before 1.19, AggregatesUpdate from 1.19.",
    ),
)
async def update_provider_aggregates(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.require("aggregates")
    api.authorize(policies.UPDATE)
    data = await api.body()
    async with db.write() as session:
        # Upstream looks the provider up before validating the body.
        provider = await providers.get(session, uuid)
        change = schemas.load_update(api.version, data)
        generation = await aggregates.replace_provider_aggregates(
            session, provider, change.uuids, expected_generation=change.expected_generation
        )
    return _render(api.version, change.uuids, generation)
