"""Claims that name a server group keep its rule, checked in the claim's transaction."""

from __future__ import annotations

import asyncio
from typing import Any

from placement_api.settings import Settings
from tests.api.allocation_helpers import (
    consumer_body,
    error,
    held,
    new_uuid,
    provider_with,
    usages,
)
from tests.db.allocation_state import _rows, usage_drift
from tests.support.client import PlacementClient


def in_group(body: dict[str, Any], group: str, policy: str, **rule: int) -> dict[str, Any]:
    return body | {"server_group": {"uuid": group, "policy": policy, **rule}}


async def claim(
    api: PlacementClient, consumer: str, host: str, group: str, policy: str, **rule: int
) -> int:
    body = in_group(consumer_body({host: {"VCPU": 1}}), group, policy, **rule)
    response = await api.put(f"/allocations/{consumer}", json=body)
    return response.status_code


async def members_per_host(settings: Settings, group: str) -> dict[str, int]:
    rows = await _rows(
        settings,
        "SELECT rp.uuid, COUNT(DISTINCT m.consumer_uuid) FROM server_group_members m "
        "JOIN server_groups g ON g.id = m.group_id "
        "JOIN consumers c ON c.uuid = m.consumer_uuid "
        "JOIN allocations a ON a.consumer_id = c.id "
        "JOIN resource_providers rp ON rp.id = a.resource_provider_id "
        "WHERE g.uuid = :group GROUP BY rp.uuid",
        group=group,
    )
    return {str(host): int(count) for host, count in rows}


async def test_concurrent_anti_affinity_claims_never_share_a_host(
    api: PlacementClient, settings: Settings
) -> None:
    hosts = [await provider_with(api, {"VCPU": {"total": 64}}) for _ in range(3)]
    group = new_uuid()
    # 8 claimers per host, all at once: exactly one per host may win.
    outcomes = await asyncio.gather(
        *(claim(api, new_uuid(), hosts[i % 3], group, "anti-affinity") for i in range(24))
    )
    assert sorted(outcomes).count(204) == 3
    assert set(outcomes) == {204, 409}
    assert await members_per_host(settings, group) == dict.fromkeys(hosts, 1)
    assert await usage_drift(settings) == []


async def test_a_violation_is_a_409_that_changes_nothing(api: PlacementClient) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    group, first, second = new_uuid(), new_uuid(), new_uuid()
    assert await claim(api, first, host, group, "anti-affinity") == 204
    body = in_group(consumer_body({host: {"VCPU": 1}}), group, "anti-affinity")
    refused = await api.put(f"/allocations/{second}", json=body)
    assert refused.status_code == 409
    assert error(refused)["code"] == "placement.server_group.violation"
    assert error(refused)["conflict"] == "server_group"
    assert await held(api, second) == {"allocations": {}}
    assert await usages(api, host) == {"VCPU": 1}
    shown = (await api.get(f"/server_groups/{group}")).json()
    assert shown["members"] == {first: [host]}
    listed = (await api.get("/server_groups", params={"member": first})).json()
    assert listed == {"server_groups": [shown]}
    assert (await api.get("/server_groups", params={"member": second})).json() == {
        "server_groups": []
    }
    assert (await api.get("/server_groups", params={"member": "nope"})).status_code == 400


async def test_max_server_per_host_allows_that_many(api: PlacementClient) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    group = new_uuid()
    outcomes = [
        await claim(api, new_uuid(), host, group, "anti-affinity", max_server_per_host=2)
        for _ in range(3)
    ]
    assert outcomes == [204, 204, 409]


async def test_affinity_keeps_every_member_on_the_first_members_host(
    api: PlacementClient,
) -> None:
    one = await provider_with(api, {"VCPU": {"total": 8}})
    two = await provider_with(api, {"VCPU": {"total": 8}})
    group = new_uuid()
    assert await claim(api, new_uuid(), one, group, "affinity") == 204
    assert await claim(api, new_uuid(), two, group, "affinity") == 409
    assert await claim(api, new_uuid(), one, group, "affinity") == 204
    # Two new members at once must land together too.
    together = new_uuid()
    split = {
        new_uuid(): in_group(consumer_body({host: {"VCPU": 1}}), together, "affinity")
        for host in (one, two)
    }
    assert (await api.post("/allocations", json=split)).status_code == 409


async def test_a_member_that_holds_nothing_counts_nowhere(api: PlacementClient) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    group, first = new_uuid(), new_uuid()
    assert await claim(api, first, host, group, "anti-affinity") == 204
    assert (await api.delete(f"/allocations/{first}")).status_code == 204
    assert await claim(api, new_uuid(), host, group, "anti-affinity") == 204


async def test_a_group_named_with_another_rule_is_refused(api: PlacementClient) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    group = new_uuid()
    assert await claim(api, new_uuid(), host, group, "soft-anti-affinity") == 204
    assert await claim(api, new_uuid(), host, group, "soft-anti-affinity") == 204
    assert await claim(api, new_uuid(), host, group, "anti-affinity") == 409


async def test_an_unknown_group_is_404_and_a_bad_policy_400(api: PlacementClient) -> None:
    assert (await api.get(f"/server_groups/{new_uuid()}")).status_code == 404
    host = await provider_with(api, {"VCPU": {"total": 8}})
    body = in_group(consumer_body({host: {"VCPU": 1}}), new_uuid(), "sideways")
    assert (await api.put(f"/allocations/{new_uuid()}", json=body)).status_code == 400


async def test_hostile_group_rules_are_400s_that_change_nothing(api: PlacementClient) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    for rule in (
        {"uuid": new_uuid(), "policy": "anti-affinity", "max_server_per_host": 0},
        {"uuid": new_uuid(), "policy": "anti-affinity", "max_server_per_host": 2**31},
        {"uuid": "not-a-uuid", "policy": "affinity"},
        {"uuid": new_uuid(), "policy": "affinity", "extra": 1},
        {"policy": "affinity"},
    ):
        body = consumer_body({host: {"VCPU": 1}}) | {"server_group": rule}
        response = await api.put(f"/allocations/{new_uuid()}", json=body)
        assert response.status_code == 400, (rule, response.text)
    assert await usages(api, host) == {"VCPU": 0}


async def test_one_consumer_spelled_two_ways_in_a_post_is_still_a_400(
    api: PlacementClient,
) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    batch = {
        consumer: consumer_body({host: {"VCPU": 1}}),
        consumer.upper(): consumer_body({host: {"VCPU": 2}}),
    }
    response = await api.post("/allocations", json=batch)
    assert response.status_code == 400
    assert "appears more than once" in error(response)["detail"]
    assert await usages(api, host) == {"VCPU": 0}
