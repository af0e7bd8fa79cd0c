"""Allocation candidates with nested providers, sharing providers and granular
groups, over HTTP on every backend.

Layout::

    host (CUSTOM_HOST, aggregate "a")        host2 (VCPU 8, MEMORY_MB 4096)
     +- numa0 (HW_NUMA_ROOT, VCPU 8, 4 used)
     |   +- pf0 (CUSTOM_PHYSNET_A, SRIOV_NET_VF 4)
     +- numa1 (HW_NUMA_ROOT, VCPU 8)
         +- pf1 (CUSTOM_PHYSNET_B, SRIOV_NET_VF 4)
    ss (sharing, DISK_GB 1000, aggregate "a")
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_allocation_candidates import candidates, get_ok, summary_names
from tests.support.client import PlacementClient
from tests.support.index_answers import settings_of_both_paths
from tests.support.provider_trees import TreeBuilder

# Every request here is answered with the provider index on (as shipped) and off.
settings = settings_of_both_paths

AC = "/allocation_candidates?"


@pytest.fixture
async def trees(api: PlacementClient) -> TreeBuilder:
    tree = TreeBuilder(api)
    await tree.provider("host", traits=["CUSTOM_HOST"], aggregates=["a"])
    for index in (0, 1):
        numa, pf = f"numa{index}", f"pf{index}"
        await tree.provider(numa, parent="host", inventory={"VCPU": 8}, traits=["HW_NUMA_ROOT"])
        physnet = "CUSTOM_PHYSNET_A" if index == 0 else "CUSTOM_PHYSNET_B"
        await tree.provider(pf, parent=numa, inventory={"SRIOV_NET_VF": 4}, traits=[physnet])
    await tree.allocate({"numa0": {"VCPU": 4}})
    await tree.provider("host2", inventory={"VCPU": 8, "MEMORY_MB": 4096})
    await tree.provider(
        "ss", inventory={"DISK_GB": 1000}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["a"]
    )
    return tree


def mappings(tree: TreeBuilder, body: dict[str, Any]) -> list[dict[str, list[str]]]:
    return [
        {suffix: sorted(tree.name_of(u) for u in uuids) for suffix, uuids in r["mappings"].items()}
        for r in body["allocation_requests"]
    ]


async def test_unsuffixed_group_spreads_over_one_tree(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, AC + "resources=VCPU:1,SRIOV_NET_VF:2")
    found = candidates(trees, body)
    assert len(found) == 4
    assert {"numa1": {"VCPU": 1}, "pf0": {"SRIOV_NET_VF": 2}} in found
    # Summaries cover the whole tree of every provider used.
    assert summary_names(trees, body) == {"host", "numa0", "numa1", "pf0", "pf1"}
    pf0 = body["provider_summaries"][trees.uuids["pf0"]]
    assert pf0["parent_provider_uuid"] == trees.uuids["numa0"]
    assert pf0["root_provider_uuid"] == trees.uuids["host"]
    assert body["provider_summaries"][trees.uuids["host"]]["resources"] == {}


async def test_before_1_29_one_tree_gives_one_provider(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    combined = await get_ok(api, AC + "resources=VCPU:1,SRIOV_NET_VF:2", version="1.28")
    assert combined["allocation_requests"] == []
    alone = await get_ok(api, AC + "resources=SRIOV_NET_VF:2", version="1.28")
    assert len(alone["allocation_requests"]) == 2
    assert summary_names(trees, alone) == {"pf0", "pf1"}


async def test_in_tree_accepts_any_provider_of_the_tree(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, AC + f"resources=VCPU:1&in_tree={trees.uuids['pf1']}")
    assert sorted(name for c in candidates(trees, body) for name in c) == ["numa0", "numa1"]


async def test_sharing_provider_serves_trees_of_its_aggregate(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, AC + "resources=VCPU:1,DISK_GB:10")
    found = candidates(trees, body)
    assert found == [
        {"numa0": {"VCPU": 1}, "ss": {"DISK_GB": 10}},
        {"numa1": {"VCPU": 1}, "ss": {"DISK_GB": 10}},
    ]
    assert summary_names(trees, body) == {"host", "numa0", "numa1", "pf0", "pf1", "ss"}


async def test_sharing_provider_alone_is_listed_once(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, AC + "resources=DISK_GB:10")
    assert candidates(trees, body) == [{"ss": {"DISK_GB": 10}}]
    assert summary_names(trees, body) == {"ss"}


async def test_tree_rules_apply_to_the_tree_not_the_sharing_provider(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    request = AC + "resources=VCPU:1,DISK_GB:10"
    host_only = await get_ok(api, request + "&root_required=CUSTOM_HOST")
    assert len(host_only["allocation_requests"]) == 2
    not_sharing = await get_ok(api, request + "&root_required=!MISC_SHARES_VIA_AGGREGATE")
    assert len(not_sharing["allocation_requests"]) == 2
    outside_a = await get_ok(api, request + f"&member_of=!{trees.aggregate('a')}")
    assert outside_a["allocation_requests"] == []


async def test_isolate_puts_granular_groups_on_distinct_providers(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    request = AC + "resources1=VCPU:1&resources2=VCPU:1&group_policy="
    isolated = await get_ok(api, request + "isolate")
    assert sorted(map(str, mappings(trees, isolated))) == sorted(
        map(str, [{"1": ["numa0"], "2": ["numa1"]}, {"1": ["numa1"], "2": ["numa0"]}])
    )
    shared = await get_ok(api, request + "none")
    assert len(shared["allocation_requests"]) == 5
    assert {"host2": {"VCPU": 2}} in candidates(trees, shared)


async def test_groups_together_must_fit_one_provider(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, AC + "resources1=VCPU:3&resources2=VCPU:3&group_policy=none")
    found = candidates(trees, body)
    # numa0 has 4 free: it takes one group but not both.
    assert {"numa0": {"VCPU": 6}} not in found
    assert {"numa1": {"VCPU": 6}} in found
    assert {"host2": {"VCPU": 6}} in found
    assert {"numa0": {"VCPU": 3}, "numa1": {"VCPU": 3}} in found


async def test_same_subtree_keeps_groups_under_one_provider(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    request = AC + (
        "resources_cpu=VCPU:1&resources_net=SRIOV_NET_VF:1&same_subtree=_cpu,_net&group_policy=none"
    )
    body = await get_ok(api, request)
    assert sorted(map(str, mappings(trees, body))) == sorted(
        map(str, [{"_cpu": ["numa0"], "_net": ["pf0"]}, {"_cpu": ["numa1"], "_net": ["pf1"]}])
    )


async def test_resourceless_group_names_an_ancestor(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    request = AC + (
        "resources=VCPU:1&resources_net=SRIOV_NET_VF:1&required_net=CUSTOM_PHYSNET_A"
        "&required_numa=HW_NUMA_ROOT&same_subtree=_net,_numa&group_policy=none"
    )
    body = await get_ok(api, request)
    assert [m["_numa"] for m in mappings(trees, body)] == [["numa0"], ["numa0"]]
    for found in candidates(trees, body):
        assert found["pf0"] == {"SRIOV_NET_VF": 1}
    old = await api.get(request, version="1.35")
    assert old.status_code == 400


async def test_wide_tree_with_many_groups_stops_at_the_limit(api: PlacementClient) -> None:
    tree = TreeBuilder(api)
    await tree.provider("gpu_host")
    for index in range(8):
        await tree.provider(f"gpu{index}", parent="gpu_host", inventory={"VGPU": 1})
    groups = "&".join(f"resources{i}=VGPU:1" for i in range(1, 9))
    for policy in ("none", "isolate"):
        body = await get_ok(api, AC + f"{groups}&group_policy={policy}&limit=20")
        found = candidates(tree, body)
        assert len(found) == 20
        assert all(len(c) == 8 for c in found)
        assert len({str(m) for m in mappings(tree, body)}) == 20
