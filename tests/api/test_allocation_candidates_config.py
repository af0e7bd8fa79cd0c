"""Service settings that shape allocation candidates: the cap on candidates
generated and randomised order, over HTTP on every backend."""

from __future__ import annotations

import pytest

from placement_api.settings import Settings
from tests.support.client import PlacementClient, app_client
from tests.support.provider_trees import TreeBuilder

HOSTS = 30


@pytest.fixture
async def hosts(api: PlacementClient) -> TreeBuilder:
    tree = TreeBuilder(api)
    for index in range(HOSTS):
        await tree.provider(f"host{index:02}", inventory={"VCPU": 4})
    return tree


async def chosen_hosts(client: PlacementClient, query: str) -> list[str]:
    response = await client.get(f"/allocation_candidates?{query}")
    assert response.status_code == 200, response.text
    return [
        uuid
        for request in response.json()["allocation_requests"]
        for uuid in request["allocations"]
    ]


async def test_cap_bounds_the_candidates_generated(settings: Settings, hosts: TreeBuilder) -> None:
    async with app_client(settings, max_allocation_candidates=3) as capped:
        assert len(await chosen_hosts(capped, "resources=VCPU:1")) == 3
        assert len(await chosen_hosts(capped, "resources=VCPU:1&limit=2")) == 2
        assert len(await chosen_hosts(capped, "resources=VCPU:1&limit=10")) == 3


async def test_without_randomising_the_order_is_stable(
    api: PlacementClient, hosts: TreeBuilder
) -> None:
    first = await chosen_hosts(api, "resources=VCPU:1&limit=5")
    assert first == await chosen_hosts(api, "resources=VCPU:1&limit=5")
    assert len(set(first)) == 5


async def test_randomised_candidates_vary_between_requests(
    settings: Settings, hosts: TreeBuilder
) -> None:
    async with app_client(settings, randomize_allocation_candidates=True) as shuffled:
        picks = [
            frozenset(await chosen_hosts(shuffled, "resources=VCPU:1&limit=5")) for _ in range(6)
        ]
        everything = await chosen_hosts(shuffled, "resources=VCPU:1")
    assert all(len(pick) == 5 for pick in picks)
    # Six equal draws of 5 from 30 would happen about once in 10**25 runs.
    assert len(set(picks)) > 1
    assert sorted(everything) == sorted(hosts.uuids.values())
