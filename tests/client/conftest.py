"""The shared Placement client against the real API (the ASGI app, noauth2)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.app import create_app
from placement_api.settings import Settings
from placement_client import PlacementClient, RetryPolicy
from tests.support import databases

URL = "http://placement"
# Short waits: the tests check how many attempts are made and how long each wait is.
FAST_RETRY = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.04, budget=5.0)


class Sent:
    """Every request a client sent: method, path and the headers it carried."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def paths(self, method: str | None = None) -> list[str]:
        return [r.url.path for r in self.requests if method is None or r.method == method]


@pytest.fixture
async def placement_app(settings: Settings, cleaner: AsyncEngine) -> AsyncIterator[FastAPI]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        yield app
    await databases.clean(cleaner)


MakeClient = Callable[..., PlacementClient]


@pytest.fixture
async def make_client(placement_app: FastAPI) -> AsyncIterator[MakeClient]:
    """Clients of the ASGI app; ``app`` wraps it (a proxy in front), ``sent`` records."""
    made: list[PlacementClient] = []

    def make(
        token: str | None = "admin",
        *,
        app: Any = None,
        sent: Sent | None = None,
        **options: Any,
    ) -> PlacementClient:
        transport = httpx.ASGITransport(app=app or placement_app)
        hooks = {"request": [sent]} if sent is not None else None
        options.setdefault("retry", FAST_RETRY)
        client = PlacementClient.with_token(
            URL, token, transport=transport, event_hooks=hooks, **options
        )
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
