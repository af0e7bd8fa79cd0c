"""Routes for /resource_providers and /resource_providers/{uuid}."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from placement_api.domain import providers
from placement_api.domain.providers import ProviderQuery, ProviderRecord
from placement_api.domain.timestamps import newest
from placement_api.microversion import Version
from placement_api.web import querystring
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import resource_providers as schemas
from placement_api.web.schemas.common import request_body
from placement_api.web.schemas.validation import load_body, load_query

router = APIRouter(tags=["resource_providers"], route_class=PlacementRoute)


def render_provider(record: ProviderRecord, version: Version) -> dict[str, Any]:
    body: dict[str, Any] = {
        "uuid": record.uuid,
        "name": record.name,
        "generation": record.generation,
        "links": schemas.provider_links(record.uuid, version),
    }
    if version.has("nested_providers"):
        body["parent_provider_uuid"] = record.parent_uuid
        body["root_provider_uuid"] = record.root_uuid
    return body


def _list_query(request: Request, version: Version) -> ProviderQuery:
    params = request.query_params
    load_query(schemas.list_query_schema(version), dict(params))
    member_of = params.getlist("member_of")
    required = params.getlist("required")
    return ProviderQuery(
        name=params.get("name"),
        uuid=params.get("uuid"),
        in_tree=params.get("in_tree"),
        member_of=querystring.parse_member_of(member_of, version) if member_of else None,
        required=querystring.parse_required(required, version, check_conflicts=False)
        if required
        else None,
        resources=querystring.parse_resources(params["resources"])
        if "resources" in params
        else None,
    )


@router.get(
    "/resource_providers",
    operation_id="listResourceProviders",
    responses={200: {"model": schemas.ProviderList}},
)
async def list_resource_providers(api: ApiDep, db: DbDep) -> Response:
    api.authorize("placement:resource_providers:list")
    query = _list_query(api.request, api.version)
    async with db.read() as session:
        records = await providers.list_providers(session, query)
    return json_response(
        api.version,
        {"resource_providers": [render_provider(r, api.version) for r in records]},
        last_modified=newest(*(r.last_modified for r in records)),
    )


@router.post(
    "/resource_providers",
    operation_id="createResourceProvider",
    status_code=201,
    responses={200: {"model": schemas.Provider, "description": "From 1.20 the body is returned."}},
    openapi_extra=request_body(
        schemas.ProviderCreate,
        schemas.ProviderCreateNested,
        description="ProviderCreateNested from 1.14 (adds parent_provider_uuid).",
    ),
)
async def create_resource_provider(api: ApiDep, db: DbDep) -> Response:
    api.authorize("placement:resource_providers:create")
    body = load_body(schemas.create_schema(api.version), await api.body())
    parent_uuid = getattr(body, "parent_provider_uuid", None)
    async with db.write() as session:
        record = await providers.create(
            session, name=body.name, uuid=body.uuid, parent_uuid=parent_uuid
        )
    location = {"location": f"/resource_providers/{record.uuid}"}
    if api.version.has("provider_create_returns_body"):
        return json_response(
            api.version,
            render_provider(record, api.version),
            last_modified=record.last_modified,
            headers=location,
        )
    return Response(status_code=201, headers=location)


@router.get(
    "/resource_providers/{uuid}",
    operation_id="showResourceProvider",
    responses={200: {"model": schemas.Provider}},
)
async def show_resource_provider(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize("placement:resource_providers:show")
    async with db.read() as session:
        record = await providers.get(session, uuid)
    return json_response(
        api.version, render_provider(record, api.version), last_modified=record.last_modified
    )


@router.put(
    "/resource_providers/{uuid}",
    operation_id="updateResourceProvider",
    responses={200: {"model": schemas.Provider}},
    openapi_extra=request_body(
        schemas.ProviderUpdate,
        schemas.ProviderUpdateNested,
        description="ProviderUpdateNested from 1.14; re-parenting and un-parenting from 1.37.",
    ),
)
async def update_resource_provider(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize("placement:resource_providers:update")
    body = load_body(schemas.update_schema(api.version), await api.body())
    async with db.write() as session:
        record = await providers.update_provider(
            session,
            uuid,
            name=body.name,
            parent_uuid=getattr(body, "parent_provider_uuid", None),
            parent_given="parent_provider_uuid" in body.model_fields_set,
            may_reparent=api.version.has("provider_reparent"),
        )
    return json_response(
        api.version, render_provider(record, api.version), last_modified=record.last_modified
    )


@router.delete("/resource_providers/{uuid}", operation_id="deleteResourceProvider", status_code=204)
async def delete_resource_provider(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize("placement:resource_providers:delete")
    async with db.write() as session:
        await providers.delete_provider(session, uuid)
    return Response(status_code=204)
