"""GET /capacity leaves out hosts that are disabled or down, counts them apart,
and counts them with ``include_unavailable=true``; per-host detail is for
administrators by default. On every backend."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from placement_api.settings import Settings
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

# One missed interval of one second makes a host down in a test's time.
MISSED_INTERVALS = 1
READER = {"X-Auth-Token": "user:project", "X-Roles": "reader"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        enforce_new_defaults=False,
        heartbeat_missed_intervals=MISSED_INTERVALS,
    )


async def _beat(api: PlacementClient, provider: str, interval: int) -> None:
    response = await api.put(
        f"/resource_providers/{provider}/heartbeat", json={"interval": interval}
    )
    assert response.status_code == 200, response.text


async def _cloud(api: PlacementClient) -> TreeBuilder:
    """Four hosts of 16 VCPU (4 instances of VCPU:4 each): ``alive`` reports
    hourly, ``silent`` never sent a heartbeat (unknown: counted), ``disabled``
    holds COMPUTE_STATUS_DISABLED, ``stopped`` missed its heartbeat."""
    trees = TreeBuilder(api)
    for name in ("alive", "silent", "disabled", "stopped"):
        await trees.provider(name, inventory={"VCPU": 16})
    await trees.set_traits("disabled", ["COMPUTE_STATUS_DISABLED"])
    await _beat(api, trees.uuids["alive"], 3600)
    await _beat(api, trees.uuids["stopped"], 1)
    await asyncio.sleep(1.2 * MISSED_INTERVALS)  # past stopped's down_after
    return trees


async def _report(api: PlacementClient, query: str, **kwargs: Any) -> dict[str, Any]:
    response = await api.get(f"/capacity{query}", **kwargs)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_disabled_and_down_hosts_are_left_out_and_counted_apart(
    api: PlacementClient,
) -> None:
    await _cloud(api)
    report = await _report(api, "?resources=VCPU:4")
    assert report["fits"] == 8  # alive and silent
    assert report["unavailable"] == {
        "hosts": 2,
        "disabled": 1,
        "down": 1,
        "included": False,
        "fits": 8,
    }
    assert sorted(h["name"] for h in report["hosts"]) == ["alive", "silent"]
    assert report["resource_classes"]["VCPU"]["capacity"] == 32
    (zone,) = report["availability_zones"]
    assert (zone["hosts"], zone["fits"]) == (2, 8)


async def test_include_unavailable_counts_every_host_and_says_which_are_not_available(
    api: PlacementClient,
) -> None:
    await _cloud(api)
    report = await _report(api, "?resources=VCPU:4&include_unavailable=true")
    assert report["fits"] == 16
    assert report["unavailable"]["included"] is True
    assert report["unavailable"]["fits"] == 8  # of the 16, 8 need the unavailable hosts
    states = {h["name"]: (h["disabled"], h["down"]) for h in report["hosts"]}
    assert states == {
        "alive": (False, False),
        "silent": (False, False),
        "disabled": (True, False),
        "stopped": (False, True),
    }
    assert report["resource_classes"]["VCPU"]["capacity"] == 64


async def test_usage_figures_leave_out_unavailable_hosts_too(api: PlacementClient) -> None:
    await _cloud(api)
    report = await _report(api, "")
    assert "fits" not in report["unavailable"]
    assert report["unavailable"]["hosts"] == 2
    assert report["resource_classes"]["VCPU"]["capacity"] == 32


async def test_a_host_enabled_again_is_counted_again(api: PlacementClient) -> None:
    trees = await _cloud(api)
    await trees.set_traits("disabled", [])
    await _beat(api, trees.uuids["stopped"], 3600)
    report = await _report(api, "?resources=VCPU:4")
    assert (report["fits"], report["unavailable"]["hosts"]) == (16, 0)


async def test_include_unavailable_takes_only_true_or_false(api: PlacementClient) -> None:
    response = await api.get("/capacity?include_unavailable=yes")
    assert response.status_code == 400, response.text
    assert "does not match" in response.json()["errors"][0]["detail"]


async def test_per_host_detail_is_for_administrators_by_default(api: PlacementClient) -> None:
    trees = TreeBuilder(api)
    await trees.provider("compute-1", inventory={"VCPU": 8})
    refused = await api.get("/capacity?by=host", headers=READER)
    assert refused.status_code == 403, refused.text
    assert "placement:capacity:hosts:read" in refused.json()["errors"][0]["detail"]
    # A reader still sees the totals, zones and aggregates, with no provider named.
    seen = await _report(api, "?resources=VCPU:1", headers=READER)
    assert seen["fits"] == 8
    assert {"hosts", "sharing_providers"}.isdisjoint(seen)
    assert {"availability_zones", "aggregates"} <= seen.keys()
    shown = await _report(api, "")  # an administrator: every breakdown by default
    assert [h["name"] for h in shown["hosts"]] == ["compute-1"]
    assert shown["sharing_providers"] == []


async def test_each_host_counts_the_consumers_holding_allocations_in_its_tree(
    api: PlacementClient,
) -> None:
    trees = TreeBuilder(api)
    await trees.provider("compute-1", inventory={"VCPU": 8})
    await trees.provider("numa-0", parent="compute-1", inventory={"MEMORY_MB": 4096})
    await trees.provider("compute-2", inventory={"VCPU": 8})
    # Two instances on compute-1 (one across root and cell), none on compute-2.
    await trees.allocate({"compute-1": {"VCPU": 1}, "numa-0": {"MEMORY_MB": 512}})
    await trees.allocate({"compute-1": {"VCPU": 2}})
    report = await _report(api, "?by=host")
    assert {h["name"]: h["consumers"] for h in report["hosts"]} == {
        "compute-1": 2,
        "compute-2": 0,
    }


async def test_what_unavailable_hosts_would_add_counts_a_shared_pool_once(
    api: PlacementClient,
) -> None:
    """Two hosts take disk from one 100 GB pool: with one disabled the other takes
    all three instances the pool has room for, so the disabled host adds none."""
    trees = TreeBuilder(api)
    await trees.provider(
        "disk-pool",
        inventory={"DISK_GB": 100},
        traits=["MISC_SHARES_VIA_AGGREGATE"],
        aggregates=["pool"],
    )
    for name in ("host-1", "host-2"):
        await trees.provider(name, inventory={"VCPU": 8}, aggregates=["pool"])
    await trees.set_traits("host-1", ["COMPUTE_STATUS_DISABLED"])
    report = await _report(api, "?resources=VCPU:1,DISK_GB:30")
    assert (report["fits"], report["unavailable"]["fits"]) == (3, 0)
    # Without the pool's limit the disabled host's own room is what it adds.
    report = await _report(api, "?resources=VCPU:2")
    assert (report["fits"], report["unavailable"]["fits"]) == (4, 4)
