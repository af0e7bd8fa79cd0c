"""Allocation writes under real concurrency never overcommit, lose or orphan anything.

Every request is a real ASGI request with its own session and transaction;
``asyncio.gather`` runs them at the same time, so on PostgreSQL the
transactions overlap and contend for the same rows. After each race the
stored state is checked directly: ``inventories.used`` equals the sum of the
allocations, nothing is orphaned, and no provider is fuller than it may be.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from httpx import Response

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
from tests.db.allocation_state import (
    consumers_without_allocations,
    consumers_without_owners,
    orphan_allocations,
    set_allocation_ratio,
    usage_drift,
)
from tests.support.client import PlacementClient

CLAIMERS = 60


def _outcomes(responses: list[Response]) -> Counter[tuple[int, str | None]]:
    """(status, conflict kind) of each response; a 5xx shows up here too."""
    return Counter(
        (r.status_code, error(r).get("conflict") if r.status_code >= 400 else None)
        for r in responses
    )


async def _consistent(settings: Settings) -> None:
    assert await usage_drift(settings) == []
    assert await orphan_allocations(settings) == []
    assert await consumers_without_allocations(settings) == []
    assert await consumers_without_owners(settings) == []


async def test_claims_on_one_provider_stop_exactly_at_capacity(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 10, "allocation_ratio": 4.0}})
    start = await generation(api, rp)
    fits = 20  # capacity 40, two each

    responses = await asyncio.gather(
        *(put_allocations(api, new_uuid(), {rp: {"VCPU": 2}}) for _ in range(CLAIMERS))
    )
    assert _outcomes(responses) == {(204, None): fits, (409, "capacity"): CLAIMERS - fits}
    assert await usages(api, rp) == {"VCPU": 2 * fits}
    assert await generation(api, rp) == start + fits
    await _consistent(settings)


async def test_claims_spanning_providers_stop_at_the_tightest(
    api: PlacementClient, settings: Settings
) -> None:
    roomy = await provider_with(api, {"VCPU": {"total": 100}})
    tight = await provider_with(api, {"DISK_GB": {"total": 25}})
    shared = await provider_with(api, {"SRIOV_NET_VF": {"total": 40}})
    providers = (roomy, tight, shared)
    starts = [await generation(api, rp) for rp in providers]
    wanted = {roomy: {"VCPU": 1}, tight: {"DISK_GB": 1}, shared: {"SRIOV_NET_VF": 1}}

    responses = await asyncio.gather(
        *(put_allocations(api, new_uuid(), wanted) for _ in range(CLAIMERS))
    )
    assert _outcomes(responses) == {(204, None): 25, (409, "capacity"): CLAIMERS - 25}
    assert [await usages(api, rp) for rp in providers] == [
        {"VCPU": 25},
        {"DISK_GB": 25},
        {"SRIOV_NET_VF": 25},
    ]
    assert [await generation(api, rp) for rp in providers] == [s + 25 for s in starts]
    await _consistent(settings)


async def test_batches_of_consumers_are_all_or_nothing_under_contention(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 31}})
    batches = 50

    def batch() -> dict[str, Any]:
        return {new_uuid(): consumer_body({rp: {"VCPU": 1}}) for _ in range(2)}

    responses = await asyncio.gather(
        *(api.post("/allocations", json=batch()) for _ in range(batches))
    )
    # 15 pairs fit in 31; the 16th pair would need 32.
    assert _outcomes(responses) == {(204, None): 15, (409, "capacity"): batches - 15}
    assert await usages(api, rp) == {"VCPU": 30}
    listed = (await api.get(f"/resource_providers/{rp}/allocations")).json()["allocations"]
    assert len(listed) == 30
    await _consistent(settings)


async def test_batches_sharing_a_new_consumer_one_wins(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 1000}})
    shared = new_uuid()

    def batch() -> dict[str, Any]:
        return {consumer: consumer_body({rp: {"VCPU": 1}}) for consumer in (shared, new_uuid())}

    responses = await asyncio.gather(*(api.post("/allocations", json=batch()) for _ in range(20)))
    assert _outcomes(responses) == {(204, None): 1, (409, "consumer_generation"): 19}
    assert (await held(api, shared))["consumer_generation"] == 1
    assert await usages(api, rp) == {"VCPU": 2}
    await _consistent(settings)


async def test_writers_with_the_same_consumer_generation_one_wins(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 1000}})
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {rp: {"VCPU": 1}})).status_code == 204

    responses = await asyncio.gather(
        *(put_allocations(api, consumer, {rp: {"VCPU": n}}, generation=1) for n in range(2, 32))
    )
    assert _outcomes(responses) == {(204, None): 1, (409, "consumer_generation"): 29}
    winner = next(n for n, r in zip(range(2, 32), responses, strict=True) if r.status_code == 204)
    shown = await held(api, consumer)
    assert shown["consumer_generation"] == 2
    assert shown["allocations"][rp]["resources"] == {"VCPU": winner}
    assert await usages(api, rp) == {"VCPU": winner}
    await _consistent(settings)


async def test_concurrent_creators_of_one_new_consumer_one_wins(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 1000}})
    consumer = new_uuid()
    responses = await asyncio.gather(
        *(put_allocations(api, consumer, {rp: {"VCPU": n}}, generation=None) for n in range(1, 31))
    )
    assert _outcomes(responses) == {(204, None): 1, (409, "consumer_generation"): 29}
    assert (await held(api, consumer))["consumer_generation"] == 1
    await _consistent(settings)


async def test_old_writers_racing_on_one_new_consumer_are_serialised(
    api: PlacementClient, settings: Settings
) -> None:
    """Before 1.28 there is no generation to be wrong about: nobody sees a 409."""
    rp = await provider_with(api, {"VCPU": {"total": 1000}})
    consumer = new_uuid()

    async def old_put(target: str, amount: int) -> Response:
        body = {
            "allocations": {rp: {"resources": {"VCPU": amount}}},
            "project_id": "p",
            "user_id": "u",
        }
        return await api.put(f"/allocations/{target}", json=body, version="1.27")

    # The owner rows exist already, so the racers collide on the consumer row itself.
    assert (await old_put(new_uuid(), 1)).status_code == 204
    responses = await asyncio.gather(*(old_put(consumer, n) for n in range(1, 21)))
    assert _outcomes(responses) == {(204, None): 20}
    assert (await held(api, consumer))["consumer_generation"] == 20
    await _consistent(settings)


async def test_deleting_a_provider_while_claims_race_leaves_no_orphans(
    api: PlacementClient, settings: Settings
) -> None:
    for _ in range(4):
        rp = await provider_with(api, {"VCPU": {"total": 1000}})
        claims = [put_allocations(api, new_uuid(), {rp: {"VCPU": 1}}) for _ in range(20)]
        claims.insert(len(claims) // 2, api.delete(f"/resource_providers/{rp}"))
        responses = await asyncio.gather(*claims)
        deleted = responses.pop(len(claims) // 2)
        if deleted.status_code == 204:
            # The delete found no allocation, so every claim came after it.
            assert {r.status_code for r in responses} == {400}
            assert all("does not exist" in error(r)["detail"] for r in responses)
        else:
            assert deleted.status_code == 409, deleted.text
            granted = [r for r in responses if r.status_code == 204]
            assert granted, "the delete was refused, so some claim came first"
            assert {r.status_code for r in responses} == {204}
            assert await usages(api, rp) == {"VCPU": len(granted)}
        await _consistent(settings)


async def _remove_class(
    api: PlacementClient, rp: str, name: str, *, yields: int
) -> tuple[int, int]:
    """Remove the provider's inventory of the class, then the class, after
    ``yields`` turns of the event loop; the two answers' statuses."""
    for _ in range(yields):
        await asyncio.sleep(0)
    inventory = await api.delete(f"/resource_providers/{rp}/inventories/{name}")
    deleted = await api.delete(f"/resource_classes/{name}")
    return inventory.status_code, deleted.status_code


async def test_deleting_a_class_while_claims_race_leaves_no_orphans(
    api: PlacementClient, settings: Settings
) -> None:
    """Claims of a custom class race the removal of its only inventory, then
    of the class: whichever comes first, no allocation outlives either."""
    for round_ in range(4):
        name = f"CUSTOM_RACED_{round_}"
        assert (await api.put(f"/resource_classes/{name}")).status_code == 201
        rp = await provider_with(api, {name: {"total": 1000}, "VCPU": {"total": 1000}})

        claims = [put_allocations(api, new_uuid(), {rp: {name: 1, "VCPU": 1}}) for _ in range(20)]
        # Started in this order: half the claims, the removal (a little later
        # each round, so either may come first), the other half.
        first = [asyncio.ensure_future(claim) for claim in claims[:10]]
        removal = asyncio.ensure_future(_remove_class(api, rp, name, yields=round_))
        responses = await asyncio.gather(*first, *claims[10:])
        inventory_status, class_status = await removal
        granted = sum(r.status_code == 204 for r in responses)
        if granted:
            assert (inventory_status, class_status) == (409, 409)
            assert await usages(api, rp) == {name: granted, "VCPU": granted}
        else:
            assert (inventory_status, class_status) == (204, 204)
        assert _outcomes(responses).keys() <= {(204, None), (409, "capacity")}
        await _consistent(settings)


async def test_racing_for_the_last_room_on_nearly_full_providers(
    api: PlacementClient, settings: Settings
) -> None:
    """Three providers with one unit left each; eight claimers want one of each."""
    providers = [await provider_with(api, {"VCPU": {"total": 10}}) for _ in range(3)]
    filler = new_uuid()
    await put_allocations(api, filler, {rp: {"VCPU": 9} for rp in providers})

    responses = await asyncio.gather(
        *(put_allocations(api, new_uuid(), {rp: {"VCPU": 1} for rp in providers}) for _ in range(8))
    )
    assert _outcomes(responses) == {(204, None): 1, (409, "capacity"): 7}
    assert [await usages(api, rp) for rp in providers] == [{"VCPU": 10}] * 3
    await _consistent(settings)


async def test_racing_on_providers_left_over_capacity_by_the_operator(
    api: PlacementClient, settings: Settings
) -> None:
    """Usage 12 against a capacity lowered to 10: keeping or shrinking usage is
    accepted, however the writers interleave, and no new claim ever fits."""
    providers = [
        await provider_with(api, {"VCPU": {"total": 10, "allocation_ratio": 2.0}}) for _ in range(3)
    ]
    holders = [new_uuid() for _ in range(3)]
    for holder in holders:
        await put_allocations(api, holder, {rp: {"VCPU": 4} for rp in providers})
    for rp in providers:
        await set_allocation_ratio(settings, rp, "VCPU", 1.0)

    keepers = [
        put_allocations(api, h, {rp: {"VCPU": 4} for rp in providers}, generation=1)
        for h in holders[:2]
    ]
    shrinker = put_allocations(api, holders[2], {rp: {"VCPU": 2} for rp in providers}, generation=1)
    newcomers = [
        put_allocations(api, new_uuid(), {rp: {"VCPU": 1} for rp in providers}) for _ in range(5)
    ]
    responses = await asyncio.gather(*keepers, shrinker, *newcomers)

    assert _outcomes(responses[:3]) == {(204, None): 3}
    assert _outcomes(responses[3:]) == {(409, "capacity"): 5}
    assert [await usages(api, rp) for rp in providers] == [{"VCPU": 10}] * 3
    await _consistent(settings)
