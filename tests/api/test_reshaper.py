"""POST /reshaper: inventories and allocations of several providers, atomically."""

from __future__ import annotations

from typing import Any

from placement_api.settings import Settings
from tests.api.allocation_helpers import (
    consumer_body,
    error,
    generation,
    held,
    new_uuid,
    provider_with,
    put_allocations,
    usages,
)
from tests.db.allocation_state import consumers_without_allocations, usage_drift
from tests.support.client import PlacementClient


async def _tree(api: PlacementClient) -> tuple[str, str, str, str]:
    """A root holding VCPU and DISK_GB with two consumers, and an empty child."""
    root = await provider_with(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    child = (await api.create_provider(parent_provider_uuid=root))["uuid"]
    first, second = new_uuid(), new_uuid()
    await put_allocations(api, first, {root: {"VCPU": 2, "DISK_GB": 10}})
    await put_allocations(api, second, {root: {"VCPU": 4}})
    return root, child, first, second


async def _move_vcpu_to_child(
    api: PlacementClient, root: str, child: str, first: str, second: str, **overrides: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "inventories": {
            root: {
                "resource_provider_generation": await generation(api, root),
                "inventories": {"DISK_GB": {"total": 100}},
            },
            child: {
                "resource_provider_generation": await generation(api, child),
                "inventories": {"VCPU": {"total": 8}},
            },
        },
        "allocations": {
            first: consumer_body({root: {"DISK_GB": 10}, child: {"VCPU": 2}}, generation=1),
            second: consumer_body({child: {"VCPU": 4}}, generation=1),
        },
    }
    body.update(overrides)
    return body


async def test_moving_inventory_and_allocations_to_a_child(
    api: PlacementClient, settings: Settings
) -> None:
    root, child, first, second = await _tree(api)
    root_gen, child_gen = await generation(api, root), await generation(api, child)
    body = await _move_vcpu_to_child(api, root, child, first, second)
    response = await api.post("/reshaper", json=body)
    assert response.status_code == 204, response.text

    assert await usages(api, root) == {"DISK_GB": 10}
    assert await usages(api, child) == {"VCPU": 6}
    assert (await held(api, first))["allocations"][child]["resources"] == {"VCPU": 2}
    assert (await held(api, second))["consumer_generation"] == 2
    # One generation step per phase that touched the provider: interim
    # inventory, allocations, final inventory (what upstream reports).
    assert await generation(api, root) == root_gen + 3
    assert await generation(api, child) == child_gen + 3
    assert await usage_drift(settings) == []


async def test_a_refused_reshape_changes_nothing(api: PlacementClient, settings: Settings) -> None:
    root, child, first, second = await _tree(api)
    body = await _move_vcpu_to_child(api, root, child, first, second)
    body["inventories"][child]["inventories"]["VCPU"]["total"] = 5
    before = (
        await generation(api, root),
        await generation(api, child),
        await usages(api, root),
        await held(api, first),
        await held(api, second),
        (await api.get(f"/resource_providers/{root}/inventories")).json(),
    )
    refused = await api.post("/reshaper", json=body)
    assert refused.status_code == 409
    assert "Unable to allocate inventory" in error(refused)["detail"]
    after = (
        await generation(api, root),
        await generation(api, child),
        await usages(api, root),
        await held(api, first),
        await held(api, second),
        (await api.get(f"/resource_providers/{root}/inventories")).json(),
    )
    assert after == before
    assert await usages(api, child) == {}
    assert await usage_drift(settings) == []


async def test_stale_provider_generation_is_a_provider_conflict(api: PlacementClient) -> None:
    root, child, first, second = await _tree(api)
    body = await _move_vcpu_to_child(api, root, child, first, second)
    body["inventories"][root]["resource_provider_generation"] -= 1
    refused = await api.post("/reshaper", json=body)
    assert refused.status_code == 409
    assert error(refused)["code"] == "placement.concurrent_update"
    assert error(refused)["conflict"] == "provider_generation"
    assert "resource provider generation conflict" in error(refused)["detail"]


async def test_removing_allocated_inventory_is_refused(api: PlacementClient) -> None:
    root, child, first, second = await _tree(api)
    body = await _move_vcpu_to_child(api, root, child, first, second)
    body["allocations"] = {}
    refused = await api.post("/reshaper", json=body)
    assert refused.status_code == 409
    assert error(refused)["code"] == "placement.inventory.inuse"
    assert await usages(api, root) == {"VCPU": 6, "DISK_GB": 10}


async def test_emptied_consumers_are_removed_and_new_ones_created(
    api: PlacementClient, settings: Settings
) -> None:
    root, child, first, second = await _tree(api)
    newcomer = new_uuid()
    body = await _move_vcpu_to_child(api, root, child, first, second)
    body["allocations"][second] = consumer_body({}, generation=1)
    body["allocations"][newcomer] = consumer_body({child: {"VCPU": 4}}, consumer_type="RESHAPED")
    assert (await api.post("/reshaper", json=body)).status_code == 204
    assert await held(api, second) == {"allocations": {}}
    assert (await held(api, newcomer))["consumer_type"] == "RESHAPED"
    assert await consumers_without_allocations(settings) == []


async def test_unknown_provider_or_class_is_400(api: PlacementClient) -> None:
    root, child, first, second = await _tree(api)
    body = await _move_vcpu_to_child(api, root, child, first, second)
    ghost = new_uuid()
    body["inventories"][ghost] = {"resource_provider_generation": 0, "inventories": {}}
    missing = await api.post("/reshaper", json=body)
    assert missing.status_code == 400
    assert error(missing)["code"] == "placement.resource_provider.not_found"
    del body["inventories"][ghost]
    body["inventories"][root]["inventories"]["CUSTOM_NOPE"] = {"total": 1}
    unknown = await api.post("/reshaper", json=body)
    assert unknown.status_code == 400
    assert "No such resource class CUSTOM_NOPE" in error(unknown)["detail"]
    assert (await api.post("/reshaper", json=body, version="1.29")).status_code == 404


async def test_amounts_summing_past_64_bits_are_refused_before_any_sql(
    api: PlacementClient, settings: Settings
) -> None:
    """Two consumers each moving 2**62 VCPU onto the child: their sum does
    not fit PostgreSQL's bigint (a 500 before); refused as no max_unit allows."""
    root, child, first, second = await _tree(api)
    body = await _move_vcpu_to_child(api, root, child, first, second)
    body["allocations"][first]["allocations"][child]["resources"]["VCPU"] = 2**62
    body["allocations"][second]["allocations"][child]["resources"]["VCPU"] = 2**62
    refused = await api.post("/reshaper", json=body)
    assert refused.status_code == 409, refused.text
    assert "violate inventory constraints" in error(refused)["detail"]
    assert await usages(api, root) == {"VCPU": 6, "DISK_GB": 10}
    assert await usage_drift(settings) == []
