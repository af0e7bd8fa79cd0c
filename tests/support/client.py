"""A thin test client: Placement headers by default, helpers for common set-up."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from httpx import ASGITransport, AsyncClient, Response

from placement_api.app import create_app
from placement_api.settings import Settings

LATEST = "latest"


class PlacementClient:
    def __init__(self, http: AsyncClient, *, token: str = "admin", version: str = LATEST) -> None:
        self.http = http
        self.token = token
        self.version = version

    def headers(self, version: str | None = None, **extra: str) -> dict[str, str]:
        headers = {
            "x-auth-token": self.token,
            "openstack-api-version": f"placement {version or self.version}",
            "accept": "application/json",
        }
        headers.update(extra)
        return headers

    async def request(
        self, method: str, path: str, *, json: Any = None, version: str | None = None, **kw: Any
    ) -> Response:
        headers = self.headers(version)
        headers.update(kw.pop("headers", {}))
        return await self.http.request(method, path, json=json, headers=headers, **kw)

    async def get(self, path: str, **kw: Any) -> Response:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, json: Any = None, **kw: Any) -> Response:
        return await self.request("POST", path, json=json, **kw)

    async def put(self, path: str, json: Any = None, **kw: Any) -> Response:
        return await self.request("PUT", path, json=json, **kw)

    async def delete(self, path: str, **kw: Any) -> Response:
        return await self.request("DELETE", path, **kw)

    async def create_provider(self, name: str | None = None, **fields: Any) -> dict[str, Any]:
        body = {"name": name or f"rp-{uuid.uuid4().hex[:8]}", **fields}
        response = await self.post("/resource_providers", json=body)
        assert response.status_code == 200, response.text
        created: dict[str, Any] = response.json()
        return created

    async def set_inventory(self, provider: dict[str, Any], inventories: dict[str, Any]) -> int:
        """PUT the inventories of a provider; returns its new generation."""
        current = (await self.get(f"/resource_providers/{provider['uuid']}")).json()
        response = await self.put(
            f"/resource_providers/{provider['uuid']}/inventories",
            json={
                "resource_provider_generation": current["generation"],
                "inventories": inventories,
            },
        )
        assert response.status_code == 200, response.text
        generation: int = response.json()["resource_provider_generation"]
        return generation


def error_code(response: Response) -> str:
    code: str = response.json()["errors"][0]["code"]
    return code


# ``app_client`` with the settings given: ``apps(changes_max_wait=2)``.
AppClients = Callable[..., AbstractAsyncContextManager[PlacementClient]]


@asynccontextmanager
async def app_client(settings: Settings, **changes: object) -> AsyncIterator[PlacementClient]:
    """An admin client over the ASGI app made with ``settings`` (and ``changes``), started."""
    app = create_app(settings.model_copy(update=changes) if changes else settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://placement") as http:
            yield PlacementClient(http)
