"""Build provider trees over HTTP for tests: providers with inventory, traits,
aggregates and allocations, each through the public API."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from tests.support.client import PlacementClient


class TreeBuilder:
    def __init__(self, api: PlacementClient) -> None:
        self.api = api
        self.uuids: dict[str, str] = {}
        self.aggregates: dict[str, str] = {}

    def aggregate(self, name: str) -> str:
        return self.aggregates.setdefault(name, str(uuid.uuid4()))

    async def _generation(self, provider: str) -> int:
        response = await self.api.get(f"/resource_providers/{provider}")
        assert response.status_code == 200, response.text
        generation: int = response.json()["generation"]
        return generation

    async def _ensure_custom(self, kind: str, names: list[str]) -> None:
        for name in names:
            if name.startswith("CUSTOM_"):
                response = await self.api.put(f"/{kind}/{name}", version="1.7")
                assert response.status_code in (201, 204), response.text

    async def provider(
        self,
        name: str,
        *,
        parent: str | None = None,
        inventory: Mapping[str, int | Mapping[str, Any]] | None = None,
        traits: list[str] | None = None,
        aggregates: list[str] | None = None,
    ) -> str:
        """Create a provider; ``inventory`` maps class -> total or full record."""
        body: dict[str, Any] = {"name": name}
        if parent is not None:
            body["parent_provider_uuid"] = self.uuids[parent]
        created = await self.api.create_provider(**body)
        provider: str = created["uuid"]
        self.uuids[name] = provider
        if inventory:
            await self.set_inventory(name, inventory)
        if traits:
            await self.set_traits(name, traits)
        if aggregates:
            await self.set_aggregates(name, aggregates)
        return provider

    async def set_inventory(
        self, name: str, inventory: Mapping[str, int | Mapping[str, Any]]
    ) -> None:
        await self._ensure_custom("resource_classes", list(inventory))
        records = {
            rc: dict(value) if isinstance(value, Mapping) else {"total": value}
            for rc, value in inventory.items()
        }
        provider = self.uuids[name]
        response = await self.api.put(
            f"/resource_providers/{provider}/inventories",
            json={
                "resource_provider_generation": await self._generation(provider),
                "inventories": records,
            },
        )
        assert response.status_code == 200, response.text

    async def set_traits(self, name: str, traits: list[str]) -> None:
        await self._ensure_custom("traits", traits)
        provider = self.uuids[name]
        response = await self.api.put(
            f"/resource_providers/{provider}/traits",
            json={
                "traits": traits,
                "resource_provider_generation": await self._generation(provider),
            },
        )
        assert response.status_code == 200, response.text

    async def set_aggregates(self, name: str, aggregates: list[str]) -> None:
        provider = self.uuids[name]
        response = await self.api.put(
            f"/resource_providers/{provider}/aggregates",
            json={
                "aggregates": [self.aggregate(a) for a in aggregates],
                "resource_provider_generation": await self._generation(provider),
            },
        )
        assert response.status_code == 200, response.text

    async def allocate(self, allocations: dict[str, dict[str, int]]) -> str:
        """One new consumer holding ``allocations`` (provider name -> resources)."""
        consumer = str(uuid.uuid4())
        response = await self.api.put(
            f"/allocations/{consumer}",
            version="1.28",
            json={
                "allocations": {
                    self.uuids[name]: {"resources": resources}
                    for name, resources in allocations.items()
                },
                "project_id": str(uuid.uuid4()),
                "user_id": str(uuid.uuid4()),
                "consumer_generation": None,
            },
        )
        assert response.status_code == 204, response.text
        return consumer

    def name_of(self, provider_uuid: str) -> str:
        return next(name for name, value in self.uuids.items() if value == provider_uuid)
