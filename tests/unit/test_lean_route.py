"""PlacementRoute: every API route is called without FastAPI's per-request
dependency solving, gets what FastAPI would have given it, and a route of
any other shape is left to FastAPI.

The plan reads FastAPI's ``Dependant``; a FastAPI that grows a new kind of
parameter there fails ``test_fastapi_dependant_has_only_the_fields_planned_for``
instead of passing that parameter over unnoticed.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse, Response

from placement_api.app import create_app
from placement_api.settings import Settings
from placement_api.web.fastpath.capabilities import route_plan_gaps
from placement_api.web.fastpath.lean_route import PLANNED_FOR, PlacementRoute, call_plan


def test_fastapi_dependant_has_only_the_fields_planned_for() -> None:
    assert route_plan_gaps() == []
    assert {field.name for field in dataclasses.fields(Dependant)} == PLANNED_FOR


def test_every_api_route_is_planned() -> None:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", metrics_enabled=True))
    routes = [route for route in app.routes if isinstance(route, APIRoute)]
    assert len(routes) > 40
    unplanned = [
        f"{route.methods} {route.path}"
        for route in routes
        if not isinstance(route, PlacementRoute)
        or call_plan(route.dependant, route.endpoint) is None
    ]
    assert unplanned == []


async def _caller(request: Request) -> str:
    return f"caller of {request.url.path}"


async def _tagged(request: Request) -> str:
    return f"tag {request.headers.get('x-tag')}"


def _sync_dependency(request: Request) -> str:
    return "sync"


router = APIRouter(route_class=PlacementRoute)


@router.get("/planned/{uuid}/{name}")
async def planned(
    uuid: str,
    caller: Annotated[str, Depends(_caller)],
    name: str,
    request: Request,
    tag: Annotated[str, Depends(_tagged)],
) -> Response:
    return JSONResponse(
        {"uuid": uuid, "name": name, "caller": caller, "tag": tag, "method": request.method}
    )


@router.get("/query")
async def with_query(q: str) -> Response:
    return JSONResponse({"q": q})


@router.get("/sync-dependency")
async def with_sync_dependency(value: Annotated[str, Depends(_sync_dependency)]) -> Response:
    return JSONResponse({"value": value})


@router.get("/number/{number}")
async def with_number(number: int) -> Response:
    return JSONResponse({"number": number})


@router.get("/plain")
async def returning_a_dict() -> dict[str, Any]:
    return {"plain": True}


def _route(path: str) -> APIRoute:
    found = next(r for r in router.routes if isinstance(r, APIRoute) and r.path == path)
    return found


def test_routes_of_other_shapes_are_left_to_fastapi() -> None:
    assert call_plan(_route("/planned/{uuid}/{name}").dependant, planned) is not None
    for path in ("/query", "/sync-dependency", "/number/{number}", "/plain"):
        route = _route(path)
        assert call_plan(route.dependant, route.endpoint) is None, path


async def test_both_kinds_answer_as_fastapi_would() -> None:
    app = FastAPI()
    app.include_router(router)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answer = await client.get("/planned/u-1/n-2", headers={"x-tag": "t"})
        assert answer.json() == {
            "uuid": "u-1",
            "name": "n-2",
            "caller": "caller of /planned/u-1/n-2",
            "tag": "tag t",
            "method": "GET",
        }
        assert (await client.get("/query", params={"q": "x"})).json() == {"q": "x"}
        assert (await client.get("/query")).status_code == 422
        assert (await client.get("/sync-dependency")).json() == {"value": "sync"}
        assert (await client.get("/number/7")).json() == {"number": 7}
        assert (await client.get("/number/seven")).status_code == 422
        assert (await client.get("/plain")).json() == {"plain": True}
