"""Routes for /allocations, /allocations/{consumer_uuid} and
/resource_providers/{uuid}/allocations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from placement_api import errors
from placement_api.auth.policies import allocation as policies
from placement_api.domain import allocations, claims, providers, server_groups
from placement_api.domain.allocations import ConsumerAllocations, ProviderAllocations
from placement_api.domain.claims import normalize_uuid
from placement_api.domain.consumers import UNKNOWN_CONSUMER_TYPE, ConsumerClaim
from placement_api.microversion import Version
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import allocations as schemas
from placement_api.web.schemas import write_limits
from placement_api.web.schemas.common import is_uuid, request_body
from placement_api.web.schemas.validation import load_body

router = APIRouter(tags=["allocations"], route_class=PlacementRoute)


def parse_consumer_uuid(text: str) -> str:
    if not is_uuid(text):
        raise errors.BadRequest(f"Malformed consumer_uuid: {text}")
    return normalize_uuid(text)


def _by_provider(body: schemas.PutShape) -> dict[str, dict[str, int]]:
    """Provider uuid -> amounts, from either the list (< 1.12) or the dict format."""
    if isinstance(body, schemas.AllocationsPut):
        entries = [(item.resource_provider.uuid, item.resources) for item in body.allocations]
    else:
        entries = [(uuid, item.resources) for uuid, item in body.allocations.items()]
    result: dict[str, dict[str, int]] = {}
    for uuid, resources in entries:
        key = normalize_uuid(uuid)
        if key in result:
            raise errors.BadRequest(
                f"Allocation for resource provider '{key}' is given more than once."
            )
        result[key] = dict(resources)
    return result


def to_claim(consumer_uuid: str, body: schemas.PutShape) -> ConsumerClaim:
    """The domain's view of one consumer's allocations, in any microversion's shape."""
    checks_generation = isinstance(body, schemas.ConsumerAllocations1_28)
    return ConsumerClaim(
        uuid=consumer_uuid,
        allocations=_by_provider(body),
        project_id=getattr(body, "project_id", None),
        user_id=getattr(body, "user_id", None),
        consumer_type=getattr(body, "consumer_type", None),
        generation=getattr(body, "consumer_generation", None),
        check_generation=checks_generation,
    )


def group_rules(
    bodies: list[tuple[str, schemas.PutShape]],
) -> dict[str, server_groups.GroupRule]:
    """Consumer uuid -> the server group its claim names (the extension)."""
    rules = {}
    for uuid, body in bodies:
        group = getattr(body, "server_group", None)
        if group is not None:
            rules[uuid] = server_groups.GroupRule(
                normalize_uuid(group.uuid), group.policy, group.max_server_per_host
            )
    return rules


async def write_claims(
    db: DbDep,
    batch: list[ConsumerClaim],
    bodies: list[tuple[str, schemas.PutShape]],
    failure: str,
) -> None:
    rules = group_rules(bodies)
    async with db.write() as session:
        if rules:
            await server_groups.replace_allocations(session, batch, rules, failure=failure)
        else:
            await claims.replace_allocations(session, batch, failure=failure)


def render_consumer(found: ConsumerAllocations | None, version: Version) -> dict[str, Any]:
    if found is None:
        return {"allocations": {}}
    body: dict[str, Any] = {
        "allocations": {
            uuid: {"generation": share.generation, "resources": share.resources}
            for uuid, share in found.providers.items()
        }
    }
    if version.has("allocations_dict_format"):
        body["project_id"] = found.project_id
        body["user_id"] = found.user_id
    if version.has("consumer_generation"):
        body["consumer_generation"] = found.generation
    if version.has("consumer_types"):
        body["consumer_type"] = found.consumer_type or UNKNOWN_CONSUMER_TYPE
    return body


def render_provider_allocations(
    found: ProviderAllocations, generation: int, version: Version
) -> dict[str, Any]:
    consumers: dict[str, Any] = {}
    for uuid, share in found.consumers.items():
        entry: dict[str, Any] = {"resources": share.resources}
        if version.has("consumer_generation"):
            entry["consumer_generation"] = share.generation
        consumers[uuid] = entry
    return {"allocations": consumers, "resource_provider_generation": generation}


@router.get(
    "/allocations/{consumer_uuid}",
    operation_id="showConsumerAllocations",
    responses={200: {"model": schemas.ConsumerAllocationsView}},
)
async def show_allocations(consumer_uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.LIST)
    async with db.read() as session:
        found = await allocations.for_consumer(session, normalize_uuid(consumer_uuid))
    return json_response(
        api.version,
        render_consumer(found, api.version),
        last_modified=found.last_modified if found else None,
    )


@router.put(
    "/allocations/{consumer_uuid}",
    operation_id="replaceConsumerAllocations",
    status_code=204,
    openapi_extra=request_body(
        schemas.AllocationsPut,
        schemas.AllocationsPut1_8,
        schemas.AllocationsPut1_12,
        schemas.AllocationsPut1_28,
        schemas.AllocationsPut1_34,
        schemas.AllocationsPut1_38,
        description="One shape per microversion range; from 1.28 empty allocations release all.",
    ),
)
async def replace_allocations(consumer_uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.UPDATE)
    uuid = parse_consumer_uuid(consumer_uuid)
    raw = await api.body()
    write_limits.check_consumer_allocations(raw, api.settings)
    body = load_body(schemas.put_schema(api.version), raw)
    claim = to_claim(uuid, body)
    await write_claims(
        db, [claim], [(uuid, body)], f"Unable to allocate inventory for consumer {uuid}"
    )
    return Response(status_code=204)


@router.delete(
    "/allocations/{consumer_uuid}", operation_id="deleteConsumerAllocations", status_code=204
)
async def delete_allocations(consumer_uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.DELETE)
    async with db.write() as session:
        await claims.remove_allocations(session, normalize_uuid(consumer_uuid))
    return Response(status_code=204)


@router.post(
    "/allocations",
    operation_id="manageAllocations",
    status_code=204,
    openapi_extra=request_body(
        schemas.AllocationsPost,
        schemas.AllocationsPost1_28,
        schemas.AllocationsPost1_34,
        schemas.AllocationsPost1_38,
        description="Microversion 1.13+: the allocations of several consumers, set atomically.",
    ),
)
async def manage_allocations(api: ApiDep, db: DbDep) -> Response:
    api.require("allocations_post")
    api.authorize(policies.MANAGE)
    raw = await api.body()
    write_limits.check_consumers(raw, api.settings)
    body = load_body(schemas.post_schema(api.version), raw)
    # A list, not a dict: one consumer spelled two ways must reach the domain twice (400).
    bodies: list[tuple[str, schemas.PutShape]] = [
        (parse_consumer_uuid(uuid), consumer) for uuid, consumer in body.root.items()
    ]
    batch = [to_claim(uuid, consumer) for uuid, consumer in bodies]
    await write_claims(db, batch, bodies, "Unable to allocate inventory")
    return Response(status_code=204)


@router.get(
    "/resource_providers/{uuid}/allocations",
    operation_id="listProviderAllocations",
    responses={200: {"model": schemas.ProviderAllocationsView}},
)
async def list_provider_allocations(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.PROVIDER_LIST)
    async with db.read() as session:
        provider = await providers.find(session, uuid)
        if provider is None:
            raise errors.NotFound(
                f"Resource provider '{uuid}' not found: No resource provider with uuid {uuid} found"
            )
        found = await allocations.for_provider(session, provider.id)
    return json_response(
        api.version,
        render_provider_allocations(found, provider.generation, api.version),
        last_modified=found.last_modified,
    )
