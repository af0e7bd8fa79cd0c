"""Route for POST /reshaper (microversion 1.30+)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import reshaper as policies
from placement_api.domain import reshaper
from placement_api.domain.claims import normalize_uuid
from placement_api.domain.reshaper import InventoryReshape
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.routers.allocations import parse_consumer_uuid, to_claim
from placement_api.web.schemas import reshaper as schemas
from placement_api.web.schemas import write_limits
from placement_api.web.schemas.common import request_body
from placement_api.web.schemas.validation import load_body

router = APIRouter(tags=["reshaper"], route_class=PlacementRoute)


@router.post(
    "/reshaper",
    operation_id="reshape",
    status_code=204,
    openapi_extra=request_body(
        schemas.Reshape,
        schemas.Reshape1_34,
        schemas.Reshape1_38,
        description="Replace inventories and the allocations of the affected consumers atomically.",
    ),
)
async def reshape(api: ApiDep, db: DbDep) -> Response:
    api.require("reshaper")
    api.authorize(policies.RESHAPE)
    raw = await api.body()
    write_limits.check_reshape(raw, api.settings)
    body = load_body(schemas.reshape_schema(api.version), raw)
    inventories = [
        InventoryReshape(
            uuid=normalize_uuid(uuid),
            generation=item.resource_provider_generation,
            inventories={name: fields.limits() for name, fields in item.inventories.items()},
        )
        for uuid, item in body.inventories.items()
    ]
    allocations = [
        to_claim(parse_consumer_uuid(uuid), item) for uuid, item in body.allocations.items()
    ]
    async with db.write() as session:
        await reshaper.reshape(session, inventories, allocations)
    return Response(status_code=204)
