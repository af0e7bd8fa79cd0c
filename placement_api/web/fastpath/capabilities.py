"""What the framework bypasses take from FastAPI's and Starlette's private
parts, checked at start-up: each gap is one line naming the library and
what changed."""

from __future__ import annotations

from importlib import metadata

from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route

from placement_api.web.fastpath.lean_route import PLANNED_FOR, dependant_fields


def _changed(library: str, change: str, user: str) -> str:
    return f"{library} {metadata.version(library)} changed what {user} relies on: {change}"


def route_plan_gaps() -> list[str]:
    """``lean_route.call_plan`` knows every field of FastAPI's ``Dependant``."""
    fields = dependant_fields()
    if fields == PLANNED_FOR:
        return []
    changed = ", ".join(sorted(fields ^ PLANNED_FOR))
    return [_changed("fastapi", f"Dependant's fields changed ({changed})", "lean_route.call_plan")]


def dispatch_gaps(app: FastAPI) -> list[str]:
    """``PlacementApp.build_middleware_stack`` and ``Dispatcher`` read the
    app's middleware, handlers and each route's pattern and convertors."""
    user = "PlacementApp and dispatch.Dispatcher"
    gaps = []
    for name in ("user_middleware", "exception_handlers", "max_body_size"):
        if not hasattr(app, name):
            gaps.append(_changed("fastapi", f"FastAPI no longer sets {name}", user))
    try:
        cls, args, kwargs = Middleware(CORSMiddleware, allow_origins=["*"])
        unpacked = (cls, args, kwargs) == (CORSMiddleware, (), {"allow_origins": ["*"]})
    except (TypeError, ValueError):
        unpacked = False
    if not unpacked:
        gaps.append(
            _changed("starlette", "Middleware no longer unpacks as (cls, args, kwargs)", user)
        )
    route = Route("/things/{name}", lambda request: None)
    for name in ("path_regex", "param_convertors", "methods"):
        if not hasattr(route, name):
            gaps.append(_changed("starlette", f"Route no longer has {name}", user))
    return gaps
