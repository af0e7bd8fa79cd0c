"""Dispatcher: every request goes to the route Starlette's router would have
chosen (the first full match in the app's order, else the first route that
matches with another method), with the same path parameters; and the app
serves through it, not through FastAPI's layers."""

from __future__ import annotations

import re

import pytest
from starlette.routing import Match, Router

from placement_api.app import create_app
from placement_api.settings import Settings
from placement_api.web.fastpath.dispatch import Dispatcher

METHODS = ("GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS")


def _router() -> Router:
    settings = Settings(database_url="sqlite+aiosqlite:///:memory:", metrics_enabled=True)
    return create_app(settings).router


def _paths(router: Router) -> list[str]:
    """Each route's path with made-up parameters, and near misses of it."""
    paths = {"/", "//", "/nothing", "/resource_providers/", "/allocations/a/b"}
    for route in router.routes:
        concrete = re.sub(r"\{[^}]+\}", "p-1", getattr(route, "path", ""))
        paths |= {concrete, concrete + "/", concrete + "/x", concrete.rstrip("/") + "x"}
    return sorted(paths)


def _starlette_choice(router: Router, path: str, method: str) -> tuple[str, dict[str, str], bool]:
    scope = {"type": "http", "path": path, "root_path": "", "method": method}
    partial = None
    for route in router.routes:
        match, child = route.matches(scope)
        if match == Match.FULL:
            return getattr(route, "path", ""), child["path_params"], True
        if match == Match.PARTIAL and partial is None:
            partial = (getattr(route, "path", ""), child["path_params"], False)
    return partial or ("", {}, False)


def test_dispatcher_chooses_as_starlettes_router() -> None:
    router = _router()
    dispatcher = Dispatcher(router, {})
    checked = 0
    for path in _paths(router):
        for method in METHODS:
            matched = dispatcher.match(path, method)
            mine = ("", {}, False) if matched is None else (matched[0].path, *matched[1:])
            assert mine == _starlette_choice(router, path, method), (method, path)
            checked += 1
    assert checked > 500


def test_the_app_serves_through_the_dispatcher() -> None:
    settings = Settings(database_url="sqlite+aiosqlite:///:memory:", metrics_enabled=True)
    app = create_app(settings)
    layer: object = app.build_middleware_stack()
    while not isinstance(layer, Dispatcher):
        layer = getattr(layer, "app", None)
        if layer is None:
            pytest.fail("no Dispatcher in the app's layers")
