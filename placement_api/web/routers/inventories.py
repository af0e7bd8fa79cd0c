"""Routes for /resource_providers/{uuid}/inventories[/{resource_class}]."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api import errors
from placement_api.auth.policies import inventory as policies
from placement_api.domain import inventories
from placement_api.domain.inventories import InventoryRecord, ProviderInventory
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import inventories as schemas
from placement_api.web.schemas.common import request_body
from placement_api.web.schemas.validation import load_body

router = APIRouter(tags=["inventories"], route_class=PlacementRoute)

COLLECTION = "/resource_providers/{uuid}/inventories"
ITEM = COLLECTION + "/{resource_class}"


def render_inventory(record: InventoryRecord, generation: int | None = None) -> dict[str, Any]:
    limits = record.limits
    body: dict[str, Any] = {
        "total": limits.total,
        "reserved": limits.reserved,
        "min_unit": limits.min_unit,
        "max_unit": limits.max_unit,
        "step_size": limits.step_size,
        "allocation_ratio": limits.allocation_ratio,
    }
    if generation is not None:
        body["resource_provider_generation"] = generation
    return body


def _inventories_response(api: ApiDep, current: ProviderInventory) -> Response:
    body = {
        "resource_provider_generation": current.generation,
        "inventories": {
            name: render_inventory(record) for name, record in current.inventories.items()
        },
    }
    return json_response(api.version, body, last_modified=current.last_modified)


def _inventory_response(
    api: ApiDep,
    generation: int,
    record: InventoryRecord,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    return json_response(
        api.version,
        render_inventory(record, generation),
        status=status,
        last_modified=record.last_modified,
        headers=headers,
    )


@router.get(
    COLLECTION, operation_id="listInventories", responses={200: {"model": schemas.InventoryList}}
)
async def list_inventories(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.LIST)
    async with db.read() as session:
        current = await inventories.read(session, uuid)
    return _inventories_response(api, current)


@router.post(
    COLLECTION,
    operation_id="createInventory",
    status_code=201,
    responses={201: {"model": schemas.Inventory}},
    openapi_extra=request_body(schemas.InventoryCreate),
)
async def create_inventory(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.CREATE)
    body = load_body(schemas.InventoryCreate, await api.body())
    async with db.write() as session:
        generation, record = await inventories.add_one(
            session,
            uuid,
            body.resource_class,
            body.limits(),
            generation=body.resource_provider_generation,
            reserved_may_equal_total=api.version.has("reserved_equal_total"),
        )
    location = api.request.url_for(
        "show_inventory", uuid=uuid, resource_class=record.resource_class
    )
    return _inventory_response(
        api, generation, record, status=201, headers={"location": str(location)}
    )


@router.put(
    COLLECTION,
    operation_id="replaceInventories",
    responses={200: {"model": schemas.InventoryList}},
    openapi_extra=request_body(
        schemas.InventoriesReplace,
        description="Classes left out are removed; reserved may equal total from 1.26.",
    ),
)
async def replace_inventories(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.UPDATE)
    body = load_body(schemas.InventoriesReplace, await api.body())
    async with db.write() as session:
        current = await inventories.replace_all(
            session,
            uuid,
            generation=body.resource_provider_generation,
            wanted={name: fields.limits() for name, fields in body.inventories.items()},
            reserved_may_equal_total=api.version.has("reserved_equal_total"),
        )
    return _inventories_response(api, current)


@router.delete(
    COLLECTION,
    operation_id="deleteInventories",
    status_code=204,
    responses={405: {"description": "Before 1.5."}},
)
async def delete_inventories(uuid: str, api: ApiDep, db: DbDep) -> Response:
    if not api.version.has("inventories_delete_all"):
        raise errors.MethodNotAllowed(
            "The method DELETE is not allowed for this resource.",
            headers={"Allow": "GET, POST, PUT"},
        )
    api.authorize(policies.DELETE)
    async with db.write() as session:
        await inventories.delete_all(session, uuid)
    return Response(status_code=204)


@router.get(ITEM, operation_id="showInventory", responses={200: {"model": schemas.Inventory}})
async def show_inventory(uuid: str, resource_class: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.SHOW)
    async with db.read() as session:
        generation, record = await inventories.read_one(session, uuid, resource_class)
    return _inventory_response(api, generation, record)


@router.put(
    ITEM,
    operation_id="updateInventory",
    responses={200: {"model": schemas.Inventory}},
    openapi_extra=request_body(schemas.InventoryUpdate),
)
async def update_inventory(uuid: str, resource_class: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.UPDATE)
    body = load_body(schemas.InventoryUpdate, await api.body())
    async with db.write() as session:
        generation, record = await inventories.update_one(
            session,
            uuid,
            resource_class,
            body.limits(),
            generation=body.resource_provider_generation,
            reserved_may_equal_total=api.version.has("reserved_equal_total"),
        )
    return _inventory_response(api, generation, record)


@router.delete(ITEM, operation_id="deleteInventory", status_code=204)
async def delete_inventory(uuid: str, resource_class: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.DELETE)
    async with db.write() as session:
        await inventories.delete_one(session, uuid, resource_class)
    return Response(status_code=204)
