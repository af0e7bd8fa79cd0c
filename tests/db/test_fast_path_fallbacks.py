"""A library that changed what a fast path relies on: start-up says so in
one warning and the public path serves, with the same answers."""

from __future__ import annotations

import logging

import pytest
import uvicorn
from httpx import ASGITransport, AsyncClient, Response
from sqlalchemy.orm import session as orm_session
from uvicorn.protocols.http import httptools_impl

from placement_api.app import create_app
from placement_api.cli.main import http_protocol
from placement_api.db.driver import DIRECT
from placement_api.settings import Settings
from placement_api.web.fastpath import capabilities
from placement_api.web.fastpath.app import PlacementApp
from placement_api.web.fastpath.dispatch import Dispatcher
from tests.support.client import AppClients, PlacementClient


async def test_a_changed_session_commit_sends_statements_through_sqlalchemy(
    apps: AppClients, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original = orm_session.SessionTransaction._prepare_impl

    def changed(self: orm_session.SessionTransaction) -> None:
        original(self)

    monkeypatch.setattr(orm_session.SessionTransaction, "_prepare_impl", changed)
    monkeypatch.setattr(DIRECT, "usable", True)
    with caplog.at_level(logging.WARNING):
        async with apps() as api:
            assert not DIRECT.usable
            provider = await api.create_provider()
            await api.set_inventory(provider, {"VCPU": {"total": 4}})
            found = await api.get("/allocation_candidates?resources=VCPU:2")
    assert found.status_code == 200
    assert list(found.json()["provider_summaries"]) == [provider["uuid"]]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "SQLAlchemy" in line and "before_commit" in line and "through SQLAlchemy's session" in line
        for line in warnings
    )


def test_a_changed_uvicorn_protocol_serves_with_uvicorns_own(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delattr(httptools_impl.HttpToolsProtocol, "_unsupported_upgrade_warning")
    with caplog.at_level(logging.WARNING):
        chosen = http_protocol()
    assert chosen == "httptools"
    assert "uvicorn" in caplog.text
    assert "_unsupported_upgrade_warning is gone" in caplog.text
    config = uvicorn.Config(lambda scope, receive, send: None, http=chosen)
    config.load()
    assert config.http_protocol_class is httptools_impl.HttpToolsProtocol


async def test_a_changed_starlette_middleware_serves_through_fastapis_own_stack(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Unpackable:  # a Middleware that no longer unpacks as (cls, args, kwargs)
        def __init__(self, cls: object, *args: object, **kwargs: object) -> None:
            self.cls = cls

    async def served(app: PlacementApp) -> list[Response]:
        async with app.router.lifespan_context(app):
            transport = ASGITransport(app=app)
            async with AsyncClient(transport=transport, base_url="http://placement") as http:
                api = PlacementClient(http)
                return [
                    await api.get("/"),
                    await api.get("/resource_providers/nothing-here"),
                    await http.patch("/resource_providers", headers=api.headers()),
                ]

    usual = create_app(settings)
    await served(usual)
    assert any(isinstance(layer, Dispatcher) for layer in _layers(usual.middleware_stack))
    monkeypatch.setattr(capabilities, "Middleware", Unpackable)
    with caplog.at_level(logging.WARNING):
        app = create_app(settings)
    assert not app.fast_dispatch
    root, missing, refused = await served(app)
    assert not any(isinstance(layer, Dispatcher) for layer in _layers(app.middleware_stack))
    assert root.status_code == 200
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["title"] == "Not Found"
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, POST"
    assert "starlette" in caplog.text
    assert "FastAPI's own routing and middleware instead" in caplog.text


def _layers(app: object) -> list[object]:
    """The ASGI apps of a middleware stack, outermost first."""
    found = []
    while app is not None:
        found.append(app)
        app = getattr(app, "app", None)
    return found
