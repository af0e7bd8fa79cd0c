"""One consumer's allocations over HTTP: PUT, GET, DELETE, on every backend."""

from __future__ import annotations

from placement_api.settings import Settings
from tests.api.allocation_helpers import (
    PROJECT,
    USER,
    consumer_body,
    error,
    generation,
    held,
    new_uuid,
    provider_with,
    put_allocations,
    usages,
)
from tests.db.allocation_state import (
    consumers_without_allocations,
    set_allocation_ratio,
    usage_drift,
)
from tests.support.client import PlacementClient


async def test_put_then_get_shows_owner_generation_and_type(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    consumer = new_uuid()
    response = await put_allocations(api, consumer, {rp: {"VCPU": 2, "MEMORY_MB": 512}})
    assert response.status_code == 204, response.text
    assert response.content == b""

    shown = await held(api, consumer)
    assert shown == {
        "allocations": {
            rp: {
                "generation": await generation(api, rp),
                "resources": {"VCPU": 2, "MEMORY_MB": 512},
            }
        },
        "project_id": PROJECT,
        "user_id": USER,
        "consumer_generation": 1,
        "consumer_type": "INSTANCE",
    }
    assert await usages(api, rp) == {"VCPU": 2, "MEMORY_MB": 512}


async def test_get_shape_follows_the_microversion(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    await put_allocations(api, consumer, {rp: {"VCPU": 1}})
    old = (await api.get(f"/allocations/{consumer}", version="1.11")).json()
    assert set(old) == {"allocations"}
    at_1_12 = (await api.get(f"/allocations/{consumer}", version="1.12")).json()
    assert set(at_1_12) == {"allocations", "project_id", "user_id"}
    at_1_28 = (await api.get(f"/allocations/{consumer}", version="1.28")).json()
    assert at_1_28["consumer_generation"] == 1
    assert "consumer_type" not in at_1_28
    missing = (await api.get(f"/allocations/{new_uuid()}")).json()
    assert missing == {"allocations": {}}


async def test_list_format_writer_gets_placeholder_owner_and_unknown_type(
    api: PlacementClient,
) -> None:
    rp = await provider_with(api, {"DISK_GB": {"total": 100}})
    consumer = new_uuid()
    body = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"DISK_GB": 10}}]}
    response = await api.put(f"/allocations/{consumer}", json=body, version="1.0")
    assert response.status_code == 204, response.text
    shown = await held(api, consumer)
    assert shown["project_id"] == "00000000-0000-0000-0000-000000000000"
    assert shown["consumer_type"] == "unknown"

    # An old writer later keeps the type a new writer gave.
    typed = consumer_body({rp: {"DISK_GB": 10}}, generation=1, consumer_type="MIGRATION")
    assert (await api.put(f"/allocations/{consumer}", json=typed)).status_code == 204
    dict_body = {
        "allocations": {rp: {"resources": {"DISK_GB": 20}}},
        "project_id": PROJECT,
        "user_id": USER,
    }
    assert (
        await api.put(f"/allocations/{consumer}", json=dict_body, version="1.12")
    ).status_code == 204
    assert (await held(api, consumer))["consumer_type"] == "MIGRATION"
    assert (await held(api, consumer))["consumer_generation"] == 3


async def test_replacing_does_not_count_the_consumers_own_allocations(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {rp: {"VCPU": 6}})).status_code == 204
    grown = await put_allocations(api, consumer, {rp: {"VCPU": 8}}, generation=1)
    assert grown.status_code == 204, grown.text
    assert await usages(api, rp) == {"VCPU": 8}


async def test_over_capacity_is_refused_naming_provider_and_class(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 2.0}})
    first = new_uuid()
    assert (await put_allocations(api, first, {rp: {"VCPU": 5}})).status_code == 204
    before = await generation(api, rp)

    refused = await put_allocations(api, new_uuid(), {rp: {"VCPU": 2}})
    assert refused.status_code == 409
    detail = error(refused)
    assert detail["code"] == "placement.undefined_code"
    assert detail["conflict"] == "capacity"
    assert f"'VCPU' on resource provider '{rp}'" in detail["detail"]
    assert "would exceed the capacity" in detail["detail"]
    assert await generation(api, rp) == before
    assert await usages(api, rp) == {"VCPU": 5}
    # Exactly up to capacity, (4 - 1) * 2 = 6, is fine.
    assert (await put_allocations(api, new_uuid(), {rp: {"VCPU": 1}})).status_code == 204


async def test_unit_constraints_are_checked_on_every_amount(api: PlacementClient) -> None:
    rp = await provider_with(
        api, {"DISK_GB": {"total": 1000, "min_unit": 10, "max_unit": 100, "step_size": 5}}
    )
    for amount in (5, 105, 12):
        refused = await put_allocations(api, new_uuid(), {rp: {"DISK_GB": amount}})
        assert refused.status_code == 409, amount
        assert "violate inventory constraints" in error(refused)["detail"]
        assert error(refused)["conflict"] == "capacity"
    assert (await put_allocations(api, new_uuid(), {rp: {"DISK_GB": 15}})).status_code == 204


async def test_class_without_inventory_is_a_conflict(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    refused = await put_allocations(api, new_uuid(), {rp: {"VCPU": 1, "PCI_DEVICE": 1}})
    assert refused.status_code == 409
    assert (
        f"Inventory for 'PCI_DEVICE' on resource provider '{rp}' invalid"
        in error(refused)["detail"]
    )
    assert await usages(api, rp) == {"VCPU": 0}


async def test_consumer_generation_guards_every_write(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    not_new = await put_allocations(api, consumer, {rp: {"VCPU": 1}}, generation=3)
    assert not_new.status_code == 409
    assert "expected null but got 3" in error(not_new)["detail"]
    assert error(not_new)["conflict"] == "consumer_generation"
    assert (await put_allocations(api, consumer, {rp: {"VCPU": 1}})).status_code == 204

    for stale in (None, 0, 2):
        refused = await put_allocations(api, consumer, {rp: {"VCPU": 2}}, generation=stale)
        assert refused.status_code == 409
        assert error(refused)["code"] == "placement.concurrent_update"
        assert error(refused)["conflict"] == "consumer_generation"
        assert f"expected 1 but got {stale}" in error(refused)["detail"]
    assert (
        await put_allocations(api, consumer, {rp: {"VCPU": 2}}, generation=1)
    ).status_code == 204
    assert (await held(api, consumer))["consumer_generation"] == 2


async def test_put_of_nothing_releases_and_removes_the_consumer(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    await put_allocations(api, consumer, {rp: {"VCPU": 3}})
    stale = await put_allocations(api, consumer, {}, generation=0)
    assert stale.status_code == 409
    assert await usages(api, rp) == {"VCPU": 3}

    before = await generation(api, rp)
    assert (await put_allocations(api, consumer, {}, generation=1)).status_code == 204
    assert await usages(api, rp) == {"VCPU": 0}
    assert await generation(api, rp) == before + 1
    assert await held(api, consumer) == {"allocations": {}}
    assert await consumers_without_allocations(settings) == []
    # The consumer is gone, so "must be new" (null) is right again.
    assert (await put_allocations(api, consumer, {}, generation=None)).status_code == 204


async def test_delete_releases_everything_and_then_404s(
    api: PlacementClient, settings: Settings
) -> None:
    first = await provider_with(api, {"VCPU": {"total": 8}})
    second = await provider_with(api, {"DISK_GB": {"total": 80}})
    consumer = new_uuid()
    await put_allocations(api, consumer, {first: {"VCPU": 2}, second: {"DISK_GB": 20}})
    generations = [await generation(api, first), await generation(api, second)]

    assert (await api.delete(f"/allocations/{consumer}")).status_code == 204
    assert await usages(api, first) == {"VCPU": 0}
    assert await usages(api, second) == {"DISK_GB": 0}
    # As upstream: a plain DELETE leaves provider generations alone.
    assert [await generation(api, first), await generation(api, second)] == generations
    again = await api.delete(f"/allocations/{consumer}")
    assert again.status_code == 404
    assert f"No allocations for consumer '{consumer}'" in error(again)["detail"]
    assert await consumers_without_allocations(settings) == []
    assert await usage_drift(settings) == []


async def test_a_move_bumps_the_provider_left_and_the_one_joined(api: PlacementClient) -> None:
    source = await provider_with(api, {"VCPU": {"total": 8}})
    target = await provider_with(api, {"VCPU": {"total": 8}})
    bystander = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    await put_allocations(api, consumer, {source: {"VCPU": 4}})
    before = {rp: await generation(api, rp) for rp in (source, target, bystander)}

    moved = await put_allocations(api, consumer, {target: {"VCPU": 4}}, generation=1)
    assert moved.status_code == 204
    after = {rp: await generation(api, rp) for rp in (source, target, bystander)}
    assert after == {
        source: before[source] + 1,
        target: before[target] + 1,
        bystander: before[bystander],
    }
    assert await usages(api, source) == {"VCPU": 0}
    assert await usages(api, target) == {"VCPU": 4}


async def test_dashless_and_upper_case_uuids_name_the_same_consumer(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    dashless = consumer.replace("-", "").upper()
    assert (await put_allocations(api, dashless, {rp.upper(): {"VCPU": 1}})).status_code == 204
    shown = await held(api, consumer)
    assert shown["allocations"][rp]["resources"] == {"VCPU": 1}
    assert (await held(api, dashless))["consumer_generation"] == 1


async def test_provider_allocations_list_every_consumer(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    first, second = new_uuid(), new_uuid()
    await put_allocations(api, first, {rp: {"VCPU": 1, "DISK_GB": 10}})
    await put_allocations(api, second, {rp: {"VCPU": 2}})
    listed = (await api.get(f"/resource_providers/{rp}/allocations")).json()
    assert listed == {
        "resource_provider_generation": await generation(api, rp),
        "allocations": {
            first: {"resources": {"VCPU": 1, "DISK_GB": 10}, "consumer_generation": 1},
            second: {"resources": {"VCPU": 2}, "consumer_generation": 1},
        },
    }
    old = (await api.get(f"/resource_providers/{rp}/allocations", version="1.27")).json()
    assert old["allocations"][second] == {"resources": {"VCPU": 2}}
    missing = await api.get(f"/resource_providers/{new_uuid()}/allocations")
    assert missing.status_code == 404


async def test_a_provider_left_over_capacity_still_takes_keeps_shrinks_and_moves(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8, "allocation_ratio": 2.0}})
    big, small = new_uuid(), new_uuid()
    await put_allocations(api, big, {rp: {"VCPU": 10}})
    await put_allocations(api, small, {rp: {"VCPU": 2}})
    await set_allocation_ratio(settings, rp, "VCPU", 1.0)  # capacity 8, usage 12

    assert (await put_allocations(api, big, {rp: {"VCPU": 10}}, generation=1)).status_code == 204
    assert (await put_allocations(api, big, {rp: {"VCPU": 9}}, generation=2)).status_code == 204
    # Moving a unit between consumers leaves usage where it is: accepted.
    move = {
        big: consumer_body({rp: {"VCPU": 8}}, generation=3),
        small: consumer_body({rp: {"VCPU": 3}}, generation=1),
    }
    assert (await api.post("/allocations", json=move)).status_code == 204
    # Any growth must fit under the capacity, which it cannot.
    grow = await put_allocations(api, small, {rp: {"VCPU": 4}}, generation=2)
    assert grow.status_code == 409
    assert error(grow)["conflict"] == "capacity"
    assert (await put_allocations(api, new_uuid(), {rp: {"VCPU": 1}})).status_code == 409
    assert await usages(api, rp) == {"VCPU": 11}
    assert await usage_drift(settings) == []
