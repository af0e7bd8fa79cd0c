"""Routes for /resource_classes and /resource_classes/{name} (microversion 1.2+)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import resource_class as policies
from placement_api.domain import resource_classes
from placement_api.domain.timestamps import newest
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import resource_classes as schemas
from placement_api.web.schemas.common import request_body
from placement_api.web.schemas.validation import load_body

router = APIRouter(tags=["resource_classes"], route_class=PlacementRoute)


@router.get(
    "/resource_classes",
    operation_id="listResourceClasses",
    responses={200: {"model": schemas.ResourceClassList}},
)
async def list_resource_classes(api: ApiDep, db: DbDep) -> Response:
    api.require("resource_classes")
    api.authorize(policies.LIST)
    async with db.read() as session:
        records = await resource_classes.list_classes(session)
    return json_response(
        api.version,
        {"resource_classes": [schemas.render_resource_class(r.name) for r in records]},
        last_modified=newest(*(r.last_modified for r in records)),
    )


@router.post(
    "/resource_classes",
    operation_id="createResourceClass",
    status_code=201,
    # The answer has no body (only Location): documented without a JSON one.
    response_class=Response,
    responses={201: {"description": "Created; the Location header names the class."}},
    openapi_extra=request_body(schemas.ResourceClassCreate),
)
async def create_resource_class(api: ApiDep, db: DbDep) -> Response:
    api.require("resource_classes")
    api.authorize(policies.CREATE)
    body = load_body(schemas.ResourceClassCreate, await api.body())
    async with db.write() as session:
        record = await resource_classes.create(session, body.name)
    return Response(status_code=201, headers={"location": schemas.resource_class_url(record.name)})


@router.get(
    "/resource_classes/{name}",
    operation_id="showResourceClass",
    responses={200: {"model": schemas.ResourceClass}},
)
async def show_resource_class(name: str, api: ApiDep, db: DbDep) -> Response:
    api.require("resource_classes")
    api.authorize(policies.SHOW)
    async with db.read() as session:
        record = await resource_classes.get(session, name)
    return json_response(
        api.version, schemas.render_resource_class(record.name), last_modified=record.last_modified
    )


@router.put(
    "/resource_classes/{name}",
    operation_id="updateResourceClass",
    responses={
        200: {"model": schemas.ResourceClass, "description": "1.2-1.6: renamed."},
        201: {"description": "From 1.7: created."},
        204: {"description": "From 1.7: already exists."},
    },
    openapi_extra=request_body(
        schemas.ResourceClassRename,
        description="1.2-1.6 only (rename). From 1.7 the request has no body.",
    ),
)
async def update_resource_class(name: str, api: ApiDep, db: DbDep) -> Response:
    api.require("resource_classes")
    api.authorize(policies.UPDATE)
    if api.version.has("resource_class_put_idempotent"):
        return await _ensure_resource_class(name, db)
    body = load_body(schemas.ResourceClassRename, await api.body())
    async with db.write() as session:
        record = await resource_classes.rename(session, name, body.name)
    return json_response(api.version, schemas.render_resource_class(record.name))


async def _ensure_resource_class(name: str, db: DbDep) -> Response:
    # The path segment gets the same validation as a POSTed name.
    load_body(schemas.ResourceClassCreate, {"name": name})
    async with db.write() as session:
        record, created = await resource_classes.ensure(session, name)
    location = {"location": schemas.resource_class_url(record.name)}
    return Response(status_code=201 if created else 204, headers=location)


@router.delete("/resource_classes/{name}", operation_id="deleteResourceClass", status_code=204)
async def delete_resource_class(name: str, api: ApiDep, db: DbDep) -> Response:
    api.require("resource_classes")
    api.authorize(policies.DELETE)
    async with db.write() as session:
        await resource_classes.delete_class(session, name)
    return Response(status_code=204)
