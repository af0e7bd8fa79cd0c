"""Routes for /traits, /traits/{name} and /resource_providers/{uuid}/traits (1.6+)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter
from starlette.datastructures import QueryParams
from starlette.responses import Response

from placement_api.auth.policies import trait as policies
from placement_api.domain import providers, traits
from placement_api.domain.timestamps import newest
from placement_api.domain.traits import ProviderTraitSet, TraitQuery
from placement_api.microversion import Version
from placement_api.web.deps import ApiDep, DbDep
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import http_date, json_response
from placement_api.web.schemas import traits as schemas
from placement_api.web.schemas.common import request_body
from placement_api.web.schemas.validation import load_body, load_query

router = APIRouter(tags=["traits"], route_class=PlacementRoute)

_PROVIDER_TRAITS = "/resource_providers/{uuid}/traits"


def _bodyless(
    version: Version,
    status: int,
    *,
    last_modified: datetime | None = None,
    location: str | None = None,
) -> Response:
    """An answer without a body; with ``last_modified``, the 1.15 cache headers too."""
    response = Response(status_code=status)
    if location is not None:
        response.headers["location"] = location
    if last_modified is not None and version.has("last_modified"):
        response.headers["last-modified"] = http_date(last_modified)
        response.headers["cache-control"] = "no-cache"
    return response


def _trait_query(params: QueryParams) -> TraitQuery:
    load_query(schemas.TraitListQuery, dict(params))
    names = schemas.parse_name_filter(params["name"]) if "name" in params else None
    associated = params.get("associated")
    return TraitQuery(
        names=names.names if names else None,
        prefix=names.prefix if names else None,
        associated=schemas.parse_associated(associated) if associated is not None else None,
    )


def _render_provider_traits(trait_set: ProviderTraitSet) -> dict[str, Any]:
    return {
        "traits": [trait.name for trait in trait_set.traits],
        "resource_provider_generation": trait_set.generation,
    }


@router.get("/traits", operation_id="listTraits", responses={200: {"model": schemas.TraitList}})
async def list_traits(api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.LIST)
    query = _trait_query(api.request.query_params)
    async with db.read() as session:
        records = await traits.list_traits(session, query)
    return json_response(
        api.version,
        {"traits": [record.name for record in records]},
        last_modified=newest(*(record.last_modified for record in records)),
    )


@router.get(
    "/traits/{name}",
    operation_id="showTrait",
    status_code=204,
    responses={404: {"description": "No such trait."}},
)
async def show_trait(name: str, api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.SHOW)
    async with db.read() as session:
        record = await traits.get_trait(session, name)
    return _bodyless(api.version, 204, last_modified=record.created_at)


@router.put(
    "/traits/{name}",
    operation_id="createTrait",
    status_code=201,
    # The answer has no body (only Location): documented without a JSON one.
    response_class=Response,
    responses={
        201: {"description": "Created; the Location header names the trait."},
        204: {"description": "The trait already existed."},
    },
)
async def create_trait(name: str, api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.UPDATE)
    schemas.check_custom_trait_name(name)
    async with db.write() as session:
        record, created = await traits.ensure_custom_trait(session, name)
    return _bodyless(
        api.version,
        201 if created else 204,
        last_modified=record.created_at,
        location=schemas.trait_url(record.name),
    )


@router.delete("/traits/{name}", operation_id="deleteTrait", status_code=204)
async def delete_trait(name: str, api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.DELETE)
    async with db.write() as session:
        await traits.delete_trait(session, name)
    return Response(status_code=204)


@router.get(
    _PROVIDER_TRAITS,
    operation_id="listResourceProviderTraits",
    responses={200: {"model": schemas.ProviderTraits}},
)
async def list_provider_traits(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.PROVIDER_LIST)
    async with db.read() as session:
        # Upstream repeats the reason after the colon on this route.
        provider = await providers.get(
            session, uuid, suffix=f": No resource provider with uuid {uuid} found"
        )
        trait_set = await traits.provider_traits(session, provider)
    return json_response(
        api.version, _render_provider_traits(trait_set), last_modified=trait_set.last_modified
    )


@router.put(
    _PROVIDER_TRAITS,
    operation_id="updateResourceProviderTraits",
    responses={200: {"model": schemas.ProviderTraits}},
    openapi_extra=request_body(schemas.ProviderTraitsUpdate),
)
async def update_provider_traits(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.PROVIDER_UPDATE)
    body = load_body(schemas.ProviderTraitsUpdate, await api.body())
    async with db.write() as session:
        provider = await providers.get(session, uuid)
        trait_set = await traits.replace_provider_traits(
            session, provider, body.traits, expected_generation=body.resource_provider_generation
        )
    return json_response(
        api.version, _render_provider_traits(trait_set), last_modified=trait_set.last_modified
    )


@router.delete(_PROVIDER_TRAITS, operation_id="deleteResourceProviderTraits", status_code=204)
async def delete_provider_traits(uuid: str, api: ApiDep, db: DbDep) -> Response:
    api.require("traits")
    api.authorize(policies.PROVIDER_DELETE)
    async with db.write() as session:
        provider = await providers.get(session, uuid)
        await traits.clear_provider_traits(session, provider)
    return Response(status_code=204)
