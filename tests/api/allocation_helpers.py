"""Small builders shared by the allocation, usage and reshaper HTTP tests."""

from __future__ import annotations

import uuid
from typing import Any

from httpx import Response

from tests.support.client import PlacementClient

PROJECT = "project-a"
USER = "user-a"

Amounts = dict[str, dict[str, int]]


def new_uuid() -> str:
    return str(uuid.uuid4())


def consumer_body(
    allocations: Amounts,
    *,
    generation: int | None = None,
    consumer_type: str = "INSTANCE",
    project: str = PROJECT,
    user: str = USER,
) -> dict[str, Any]:
    """One consumer's allocations in the latest (1.38) shape."""
    return {
        "allocations": {rp: {"resources": amounts} for rp, amounts in allocations.items()},
        "project_id": project,
        "user_id": user,
        "consumer_generation": generation,
        "consumer_type": consumer_type,
    }


async def put_allocations(
    api: PlacementClient, consumer: str, allocations: Amounts, **fields: Any
) -> Response:
    return await api.put(f"/allocations/{consumer}", json=consumer_body(allocations, **fields))


async def provider_with(api: PlacementClient, inventories: dict[str, Any], **fields: Any) -> str:
    provider = await api.create_provider(**fields)
    await api.set_inventory(provider, inventories)
    uuid_: str = provider["uuid"]
    return uuid_


async def generation(api: PlacementClient, provider: str) -> int:
    value: int = (await api.get(f"/resource_providers/{provider}")).json()["generation"]
    return value


async def usages(api: PlacementClient, provider: str) -> dict[str, int]:
    found: dict[str, int] = (await api.get(f"/resource_providers/{provider}/usages")).json()[
        "usages"
    ]
    return found


async def held(api: PlacementClient, consumer: str) -> dict[str, Any]:
    found: dict[str, Any] = (await api.get(f"/allocations/{consumer}")).json()
    return found


def error(response: Response) -> dict[str, Any]:
    entry: dict[str, Any] = response.json()["errors"][0]
    return entry
