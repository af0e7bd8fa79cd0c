"""GET /changes: the exact entries each kind of write records."""

from __future__ import annotations

from placement_api.settings import Settings
from tests.api.allocation_helpers import (
    consumer_body,
    generation,
    new_uuid,
    provider_with,
    put_allocations,
)
from tests.api.changes_helpers import (
    changes_after,
    latest_index,
    provider_inventories,
    provider_state,
)
from tests.support.client import PlacementClient


async def test_provider_create_rename_reparent_and_delete_are_recorded(
    api: PlacementClient,
) -> None:
    start = await latest_index(api)
    first = await api.create_provider("first")
    child = await api.create_provider("child", parent_provider_uuid=first["uuid"])
    grandchild = await api.create_provider("grandchild", parent_provider_uuid=child["uuid"])
    second = await api.create_provider("second")
    created = [await provider_state(api, p["uuid"]) for p in (first, child, grandchild, second)]
    assert await changes_after(api, start) == [
        {"resource": "resource_provider", "action": "created", "uuid": p["uuid"], **state}
        for p, state in zip((first, child, grandchild, second), created, strict=True)
    ]

    moved_from = await latest_index(api)
    response = await api.put(
        f"/resource_providers/{child['uuid']}",
        json={"name": "child-renamed", "parent_provider_uuid": second["uuid"]},
    )
    assert response.status_code == 200, response.text
    assert await changes_after(api, moved_from) == [
        {
            "resource": "resource_provider",
            "action": "updated",
            "uuid": grandchild["uuid"],
            **await provider_state(api, grandchild["uuid"]),
        },
        {
            "resource": "resource_provider",
            "action": "updated",
            "uuid": child["uuid"],
            **await provider_state(api, child["uuid"]),
        },
    ]
    assert (await provider_state(api, grandchild["uuid"]))["root_uuid"] == second["uuid"]

    deleted_from = await latest_index(api)
    last_seen = await provider_state(api, grandchild["uuid"])
    assert (await api.delete(f"/resource_providers/{grandchild['uuid']}")).status_code == 204
    assert await changes_after(api, deleted_from) == [
        {
            "resource": "resource_provider",
            "action": "deleted",
            "uuid": grandchild["uuid"],
            **last_seen,
        }
    ]


async def test_every_inventory_write_records_the_whole_inventory_after_it(
    api: PlacementClient,
) -> None:
    provider = (await api.create_provider())["uuid"]
    path = f"/resource_providers/{provider}/inventories"
    start = await latest_index(api)
    gen = await generation(api, provider)
    put_all = {"resource_provider_generation": gen, "inventories": {"VCPU": {"total": 8}}}
    assert (await api.put(path, json=put_all)).status_code == 200
    after_put_all = await provider_inventories(api, provider)
    post = {"resource_class": "DISK_GB", "total": 100, "resource_provider_generation": gen + 1}
    assert (await api.post(path, json=post)).status_code == 201
    after_post = await provider_inventories(api, provider)
    put_one = {"resource_provider_generation": gen + 2, "total": 16, "reserved": 2}
    assert (await api.put(f"{path}/VCPU", json=put_one)).status_code == 200
    after_put_one = await provider_inventories(api, provider)
    assert (await api.delete(f"{path}/DISK_GB")).status_code == 204
    after_delete_one = await provider_inventories(api, provider)
    assert (await api.delete(path)).status_code == 204
    after_delete_all = await provider_inventories(api, provider)

    def entry(action: str, classes: list[str], state: tuple[int, dict[str, object]]) -> object:
        return {
            "resource": "inventory",
            "action": action,
            "uuid": provider,
            "generation": state[0],
            "resource_classes": classes,
            "inventories": state[1],
        }

    assert after_delete_all == (gen + 5, {})
    assert await changes_after(api, start) == [
        entry("updated", ["VCPU"], after_put_all),
        entry("created", ["DISK_GB"], after_post),
        entry("updated", ["VCPU"], after_put_one),
        entry("deleted", ["DISK_GB"], after_delete_one),
        entry("deleted", ["VCPU"], after_delete_all),
    ]


async def test_allocation_writes_record_the_consumer_and_the_usage_after(
    api: PlacementClient,
) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}})
    other = await provider_with(api, {"VCPU": {"total": 8}})
    first, second = new_uuid(), new_uuid()
    start = await latest_index(api)
    assert (await put_allocations(api, first, {host: {"VCPU": 2, "MEMORY_MB": 512}})).is_success
    created_gen = await generation(api, host)
    moves = {
        first: consumer_body({other: {"VCPU": 2}}, generation=1),
        second: consumer_body({host: {"VCPU": 1}}, generation=None),
    }
    assert (await api.post("/allocations", json=moves)).status_code == 204
    assert (await api.delete(f"/allocations/{second}")).status_code == 204
    host_gen, other_gen = await generation(api, host), await generation(api, other)

    assert await changes_after(api, start) == [
        {
            "resource": "allocation",
            "action": "created",
            "uuid": first,
            "generation": 1,
            "allocations": {host: {"VCPU": 2, "MEMORY_MB": 512}},
            "usages": {host: {"VCPU": 2, "MEMORY_MB": 512}},
            "resource_providers": {host: created_gen},
            "resource_classes": ["MEMORY_MB", "VCPU"],
        },
        # POST /allocations: one change per consumer, in the order the body gave them.
        {
            "resource": "allocation",
            "action": "updated",
            "uuid": first,
            "generation": 2,
            "allocations": {other: {"VCPU": 2}},
            "usages": {host: {"VCPU": 1, "MEMORY_MB": 0}, other: {"VCPU": 2}},
            "resource_providers": {host: host_gen, other: other_gen},
            "resource_classes": ["MEMORY_MB", "VCPU"],
        },
        {
            "resource": "allocation",
            "action": "created",
            "uuid": second,
            "generation": 1,
            "allocations": {host: {"VCPU": 1}},
            "usages": {host: {"VCPU": 1}},
            "resource_providers": {host: host_gen},
            "resource_classes": ["VCPU"],
        },
        # A plain DELETE leaves provider generations alone, as upstream.
        {
            "resource": "allocation",
            "action": "deleted",
            "uuid": second,
            "generation": None,
            "allocations": {},
            "usages": {host: {"VCPU": 0}},
            "resource_providers": {host: host_gen},
            "resource_classes": ["VCPU"],
        },
    ]


async def test_putting_no_allocations_records_the_consumer_deleted(api: PlacementClient) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {host: {"VCPU": 3}})).is_success
    start = await latest_index(api)
    assert (await put_allocations(api, consumer, {}, generation=1)).is_success
    [entry] = await changes_after(api, start)
    assert entry == {
        "resource": "allocation",
        "action": "deleted",
        "uuid": consumer,
        "generation": None,
        "allocations": {},
        "usages": {host: {"VCPU": 0}},
        "resource_providers": {host: await generation(api, host)},
        "resource_classes": ["VCPU"],
    }


async def test_reshape_records_inventories_then_allocations(api: PlacementClient) -> None:
    root = await provider_with(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    child = (await api.create_provider(parent_provider_uuid=root))["uuid"]
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {root: {"VCPU": 2, "DISK_GB": 10}})).is_success
    start = await latest_index(api)
    body = {
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
            consumer: consumer_body({root: {"DISK_GB": 10}, child: {"VCPU": 2}}, generation=1)
        },
    }
    response = await api.post("/reshaper", json=body)
    assert response.status_code == 204, response.text
    root_state, child_state = (
        await provider_inventories(api, root),
        await provider_inventories(api, child),
    )
    assert await changes_after(api, start) == [
        {
            "resource": "inventory",
            "action": "updated",
            "uuid": root,
            "generation": root_state[0],
            "resource_classes": ["DISK_GB"],
            "inventories": root_state[1],
        },
        {
            "resource": "inventory",
            "action": "updated",
            "uuid": child,
            "generation": child_state[0],
            "resource_classes": ["VCPU"],
            "inventories": child_state[1],
        },
        {
            "resource": "allocation",
            "action": "updated",
            "uuid": consumer,
            "generation": 2,
            "allocations": {root: {"DISK_GB": 10}, child: {"VCPU": 2}},
            "usages": {root: {"VCPU": 0, "DISK_GB": 10}, child: {"VCPU": 2}},
            "resource_providers": {root: root_state[0], child: child_state[0]},
            "resource_classes": ["DISK_GB", "VCPU"],
        },
    ]


async def test_traits_and_aggregates_of_providers_and_custom_traits_are_recorded(
    api: PlacementClient,
) -> None:
    provider = (await api.create_provider())["uuid"]
    aggregate = new_uuid()
    start = await latest_index(api)
    assert (await api.put("/traits/CUSTOM_FAST")).status_code == 201
    assert (await api.put("/traits/CUSTOM_FAST")).status_code == 204
    traits = {"traits": ["CUSTOM_FAST", "HW_CPU_X86_AVX"], "resource_provider_generation": 0}
    assert (await api.put(f"/resource_providers/{provider}/traits", json=traits)).is_success
    assert (await api.delete(f"/resource_providers/{provider}/traits")).status_code == 204
    assert (await api.delete("/traits/CUSTOM_FAST")).status_code == 204
    aggregates = {"aggregates": [aggregate], "resource_provider_generation": 2}
    assert (await api.put(f"/resource_providers/{provider}/aggregates", json=aggregates)).is_success
    assert await changes_after(api, start) == [
        {"resource": "trait", "action": "created", "uuid": "CUSTOM_FAST", "name": "CUSTOM_FAST"},
        {
            "resource": "trait",
            "action": "updated",
            "uuid": provider,
            "generation": 1,
            "traits": ["CUSTOM_FAST", "HW_CPU_X86_AVX"],
        },
        {"resource": "trait", "action": "updated", "uuid": provider, "generation": 2, "traits": []},
        {"resource": "trait", "action": "deleted", "uuid": "CUSTOM_FAST", "name": "CUSTOM_FAST"},
        {
            "resource": "aggregate",
            "action": "updated",
            "uuid": provider,
            "generation": 3,
            "aggregates": [aggregate],
        },
    ]


async def test_resource_class_create_rename_and_delete_are_recorded(api: PlacementClient) -> None:
    start = await latest_index(api)
    assert (await api.post("/resource_classes", json={"name": "CUSTOM_A"})).status_code == 201
    assert (await api.put("/resource_classes/CUSTOM_B")).status_code == 201
    assert (await api.put("/resource_classes/CUSTOM_B")).status_code == 204
    rename = await api.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_C"}, version="1.6")
    assert rename.status_code == 200, rename.text
    assert (await api.delete("/resource_classes/CUSTOM_C")).status_code == 204
    assert await changes_after(api, start) == [
        {"resource": "resource_class", "action": "created", "uuid": "CUSTOM_A", "name": "CUSTOM_A"},
        {"resource": "resource_class", "action": "created", "uuid": "CUSTOM_B", "name": "CUSTOM_B"},
        {"resource": "resource_class", "action": "updated", "uuid": "CUSTOM_A", "name": "CUSTOM_C"},
        {"resource": "resource_class", "action": "deleted", "uuid": "CUSTOM_C", "name": "CUSTOM_C"},
    ]


async def test_refused_writes_record_nothing(api: PlacementClient, settings: Settings) -> None:
    host = await provider_with(api, {"VCPU": {"total": 2}}, name="host")
    start = await latest_index(api)
    assert (await put_allocations(api, new_uuid(), {host: {"VCPU": 3}})).status_code == 409
    assert (await api.post("/resource_providers", json={"name": "host"})).status_code == 409
    stale = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}
    assert (await api.put(f"/resource_providers/{host}/inventories", json=stale)).status_code == 409
    assert await latest_index(api) == start
    assert await changes_after(api, start) == []
