"""Reading the change feed in tests: entries after an index, checked to be gap-free."""

from __future__ import annotations

from typing import Any

from tests.support.client import PlacementClient


async def latest_index(api: PlacementClient) -> int:
    response = await api.get("/changes")
    assert response.status_code == 200, response.text
    index: int = response.json()["index"]
    return index


async def changes_after(api: PlacementClient, since: int) -> list[dict[str, Any]]:
    """Every change after ``since``, without their indexes, checked to run
    from ``since + 1`` to the feed's latest index without a hole."""
    response = await api.get(f"/changes?since={since}&limit=10000")
    assert response.status_code == 200, response.text
    body = response.json()
    found: list[dict[str, Any]] = body["changes"]
    assert [entry["index"] for entry in found] == list(range(since + 1, body["index"] + 1))
    return [{k: v for k, v in entry.items() if k != "index"} for entry in found]


async def provider_inventories(api: PlacementClient, uuid: str) -> tuple[int, dict[str, Any]]:
    """A provider's generation and whole inventory, as GET shows them."""
    body = (await api.get(f"/resource_providers/{uuid}/inventories")).json()
    return body["resource_provider_generation"], body["inventories"]


async def provider_state(api: PlacementClient, uuid: str) -> dict[str, Any]:
    """The fields a provider change carries, as GET shows them."""
    body = (await api.get(f"/resource_providers/{uuid}")).json()
    return {
        "generation": body["generation"],
        "name": body["name"],
        "parent_uuid": body["parent_provider_uuid"],
        "root_uuid": body["root_provider_uuid"],
    }
