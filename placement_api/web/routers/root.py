"""``GET /``: the version document. It needs no authentication."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from placement_api import microversion
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas.root import VersionDocument

router = APIRouter(tags=["root"], route_class=PlacementRoute)


@router.get("/", operation_id="getVersions", response_model=VersionDocument)
async def versions(request: Request) -> Response:
    document = VersionDocument.current(microversion.MIN_VERSION, microversion.MAX_VERSION)
    return json_response(request.state.microversion, document.model_dump())
