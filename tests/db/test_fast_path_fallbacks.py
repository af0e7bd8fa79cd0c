"""A library that changed what a fast path relies on: start-up says so in
one warning and the public path serves, with the same answers."""

from __future__ import annotations

import logging

import pytest
import uvicorn
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import session as orm_session
from uvicorn.protocols.http import httptools_impl

from placement_api.cli.main import http_protocol
from placement_api.db.driver import DIRECT
from placement_api.settings import Settings
from tests.support import databases
from tests.support.client import app_client


async def test_a_changed_session_commit_sends_statements_through_sqlalchemy(
    settings: Settings,
    cleaner: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    original = orm_session.SessionTransaction._prepare_impl

    def changed(self: orm_session.SessionTransaction) -> None:
        original(self)

    monkeypatch.setattr(orm_session.SessionTransaction, "_prepare_impl", changed)
    monkeypatch.setattr(DIRECT, "usable", True)
    with caplog.at_level(logging.WARNING):
        async with app_client(settings) as api:
            assert not DIRECT.usable
            provider = await api.create_provider()
            await api.set_inventory(provider, {"VCPU": {"total": 4}})
            found = await api.get("/allocation_candidates?resources=VCPU:2")
    await databases.clean(cleaner)
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
