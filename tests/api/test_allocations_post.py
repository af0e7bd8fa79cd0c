"""POST /allocations: several consumers set or cleared in one transaction."""

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


async def test_a_migration_moves_the_source_claim_to_the_migration_consumer(
    api: PlacementClient, settings: Settings
) -> None:
    source = await provider_with(api, {"VCPU": {"total": 4}})
    target = await provider_with(api, {"VCPU": {"total": 4}})
    instance, migration = new_uuid(), new_uuid()
    await put_allocations(api, instance, {source: {"VCPU": 4}})

    # The instance claims the target while the migration record keeps the source.
    move = {
        instance: consumer_body({target: {"VCPU": 4}}, generation=1),
        migration: consumer_body({source: {"VCPU": 4}}, consumer_type="MIGRATION"),
    }
    response = await api.post("/allocations", json=move)
    assert response.status_code == 204, response.text
    assert (await held(api, instance))["allocations"][target]["resources"] == {"VCPU": 4}
    assert (await held(api, migration))["allocations"][source]["resources"] == {"VCPU": 4}
    assert await usages(api, source) == {"VCPU": 4}

    confirm = {migration: consumer_body({}, generation=1, consumer_type="MIGRATION")}
    assert (await api.post("/allocations", json=confirm)).status_code == 204
    assert await usages(api, source) == {"VCPU": 0}
    assert await usages(api, target) == {"VCPU": 4}
    assert await consumers_without_allocations(settings) == []
    assert await usage_drift(settings) == []


async def test_one_refused_consumer_refuses_the_whole_batch(api: PlacementClient) -> None:
    small = await provider_with(api, {"VCPU": {"total": 2}})
    large = await provider_with(api, {"VCPU": {"total": 64}})
    fits, too_big = new_uuid(), new_uuid()
    generations = (await generation(api, small), await generation(api, large))
    batch = {
        fits: consumer_body({large: {"VCPU": 8}}),
        too_big: consumer_body({small: {"VCPU": 3}}),
    }
    refused = await api.post("/allocations", json=batch)
    assert refused.status_code == 409
    assert "The requested amount would exceed the capacity" in error(refused)["detail"]
    assert await held(api, fits) == {"allocations": {}}
    assert await usages(api, large) == {"VCPU": 0}
    assert (await generation(api, small), await generation(api, large)) == generations


async def test_consumers_that_fit_one_by_one_but_not_together_refuse_the_batch(
    api: PlacementClient, settings: Settings
) -> None:
    # Usage is checked per (provider, class) on the sum of the batch, not per consumer.
    host = await provider_with(api, {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 1024}})
    await put_allocations(api, new_uuid(), {host: {"VCPU": 1, "MEMORY_MB": 128}})
    batch = {new_uuid(): consumer_body({host: {"VCPU": 2, "MEMORY_MB": 128}}) for _ in range(2)}
    refused = await api.post("/allocations", json=batch)
    assert refused.status_code == 409
    assert "'VCPU' on resource provider" in error(refused)["detail"]
    assert await usages(api, host) == {"VCPU": 1, "MEMORY_MB": 128}
    assert await usage_drift(settings) == []


async def test_a_stale_consumer_in_the_batch_refuses_the_batch(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    existing, fresh = new_uuid(), new_uuid()
    await put_allocations(api, existing, {rp: {"VCPU": 1}})
    batch = {
        fresh: consumer_body({rp: {"VCPU": 1}}),
        existing: consumer_body({rp: {"VCPU": 2}}, generation=7),
    }
    refused = await api.post("/allocations", json=batch)
    assert refused.status_code == 409
    assert error(refused)["conflict"] == "consumer_generation"
    assert "consumer generation conflict - expected 1 but got 7" in error(refused)["detail"]
    assert await held(api, fresh) == {"allocations": {}}
    assert await usages(api, rp) == {"VCPU": 1}


async def test_new_consumers_are_created_together_unless_one_exists(
    api: PlacementClient,
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    existing = new_uuid()
    await put_allocations(api, existing, {rp: {"VCPU": 1}})
    created = [new_uuid() for _ in range(3)]
    batch = {consumer: consumer_body({rp: {"VCPU": 1}}) for consumer in created}
    assert (await api.post("/allocations", json=batch)).status_code == 204
    assert [(await held(api, c))["consumer_generation"] for c in created] == [1, 1, 1]

    # "New" (a null generation) for a consumer that exists refuses the batch.
    fresh = new_uuid()
    batch = {fresh: consumer_body({rp: {"VCPU": 1}}), existing: consumer_body({rp: {"VCPU": 1}})}
    refused = await api.post("/allocations", json=batch)
    assert refused.status_code == 409
    assert error(refused)["conflict"] == "consumer_generation"
    assert "consumer generation conflict - expected 1 but got None" in error(refused)["detail"]
    assert await held(api, fresh) == {"allocations": {}}
    assert await usages(api, rp) == {"VCPU": 4}


async def test_post_is_absent_before_1_13_and_versions_its_shape(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    owner: dict[str, Any] = {"project_id": "p", "user_id": "u"}
    body = {consumer: {"allocations": {rp: {"resources": {"VCPU": 1}}}, **owner}}
    assert (await api.post("/allocations", json=body, version="1.12")).status_code == 404
    without_generation = await api.post("/allocations", json=body, version="1.28")
    assert without_generation.status_code == 400
    assert (await api.post("/allocations", json=body, version="1.13")).status_code == 204
    assert (await held(api, consumer))["consumer_type"] == "unknown"
    assert (await api.get("/allocations")).headers["allow"] == "POST"


async def test_clearing_a_consumer_that_holds_nothing_is_a_no_op(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    before = await generation(api, rp)
    response = await api.post("/allocations", json={new_uuid(): consumer_body({})})
    assert response.status_code == 204
    assert await generation(api, rp) == before
    assert await consumers_without_allocations(settings) == []
