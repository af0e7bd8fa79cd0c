"""GET /capacity against hand-computed clouds, on every backend.

Each case builds providers through the API and checks the report's numbers
against the arithmetic worked out in its comments.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from placement_api.settings import Settings
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

EAST, WEST, POOL = (str(uuid.uuid4()) for _ in range(3))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Aggregates named and zoned in a scheduler configuration file."""
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "host_subset_size": 2,  # a scheduler setting: ignored here
                "aggregates": {
                    EAST: {"name": "east-racks", "availability_zone": "east"},
                    WEST: {"name": "west-racks", "availability_zone": "west"},
                },
            }
        )
    )
    return Settings(
        database_url=database_url,
        enforce_new_defaults=False,
        capacity_aggregates_file=config,
        capacity_default_availability_zone="spare",
    )


def _trees(api: PlacementClient) -> TreeBuilder:
    trees = TreeBuilder(api)
    trees.aggregates.update({"east": EAST, "west": WEST, "pool": POOL})
    return trees


async def _report(api: PlacementClient, query: str = "") -> dict[str, Any]:
    response = await api.get(f"/capacity{query}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _host(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(h for h in report["hosts"] if h["name"] == name)
    return found


async def test_capacity_is_total_minus_reserved_times_ratio_floored_minus_used(
    api: PlacementClient,
) -> None:
    trees = _trees(api)
    await trees.provider(
        "host-a",
        inventory={
            "VCPU": {"total": 8, "reserved": 2, "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": 4096, "reserved": 512, "allocation_ratio": 1.5},
            "DISK_GB": {"total": 3, "allocation_ratio": 1.5},
        },
    )
    await trees.allocate({"host-a": {"VCPU": 5, "MEMORY_MB": 1024}})
    report = await _report(api, "?resources=VCPU:2,MEMORY_MB:1024")
    host = _host(report, "host-a")
    # VCPU (8 - 2) * 4 = 24, 5 used: 19 free, 9 slots of 2.
    assert host["resources"]["VCPU"] == {
        "total": 8,
        "reserved": 2,
        "allocation_ratio": 4.0,
        "capacity": 24,
        "used": 5,
        "free": 19,
    }
    # MEMORY_MB (4096 - 512) * 1.5 = 5376, 1024 used: 4352 free, 4 slots of 1024.
    assert host["resources"]["MEMORY_MB"]["free"] == 4352
    # DISK_GB 3 * 1.5 = 4.5, shown floored.
    assert host["resources"]["DISK_GB"]["capacity"] == 4
    assert host["fits"] == 4
    assert report["fits"] == 4
    # Not the exporter's total * ratio - reserved (8 * 4 - 2 = 30).
    assert report["resource_classes"]["VCPU"]["capacity"] == 24


async def test_units_decide_whether_an_amount_fits_at_all(api: PlacementClient) -> None:
    trees = _trees(api)
    await trees.provider(
        "host-u",
        inventory={"VCPU": {"total": 16, "min_unit": 2, "max_unit": 4, "step_size": 2}},
    )
    expected = {"VCPU:2": 8, "VCPU:4": 4, "VCPU:1": 0, "VCPU:3": 0, "VCPU:6": 0}
    for resources, fits in expected.items():
        report = await _report(api, f"?resources={resources}&by=host")
        assert (resources, report["fits"], _host(report, "host-u")["fits"]) == (
            resources,
            fits,
            fits,
        )


async def test_a_host_over_capacity_shows_negative_free_and_fits_nothing(
    api: PlacementClient,
) -> None:
    trees = _trees(api)
    await trees.provider("host-o", inventory={"VCPU": 8})
    await trees.provider("host-p", inventory={"VCPU": 8})
    await trees.allocate({"host-o": {"VCPU": 6}})
    await trees.set_inventory("host-o", {"VCPU": 4})  # accepted, leaves it over capacity
    report = await _report(api, "?resources=VCPU:1")
    assert _host(report, "host-o")["resources"]["VCPU"]["free"] == -2
    assert _host(report, "host-o")["fits"] == 0
    assert report["fits"] == 8
    # Cloud-wide: capacity 12, used 6; 2 of the 6 used lie beyond host-o's 4.
    assert report["resource_classes"]["VCPU"] == {
        "total": 12,
        "reserved": 0,
        "capacity": 12,
        "used": 6,
        "free": 6,
        "overcommitted_share": pytest.approx(2 / 6),
    }


async def test_numa_cells_of_a_tree_each_give_whole_slots(api: PlacementClient) -> None:
    trees = _trees(api)
    await trees.provider("host-n")
    await trees.provider("host-n-numa0", parent="host-n", inventory={"VCPU": 4, "MEMORY_MB": 4096})
    await trees.provider("host-n-numa1", parent="host-n", inventory={"VCPU": 4, "MEMORY_MB": 2048})
    report = await _report(api, "?resources=VCPU:3,MEMORY_MB:1500")
    host = _host(report, "host-n")
    # VCPU: 1 slot per cell (not 8 // 3 = 2 pooled); MEMORY_MB: 2 + 1 slots.
    assert host["fits"] == 2
    assert report["fits"] == 2
    assert host["resources"]["VCPU"]["total"] == 8
    assert host["resources"]["MEMORY_MB"]["capacity"] == 6144
    assert [h["name"] for h in report["hosts"]] == ["host-n"]


async def test_a_sharing_provider_is_counted_once_for_the_hosts_it_serves(
    api: PlacementClient,
) -> None:
    trees = _trees(api)
    await trees.provider(
        "disk-pool",
        inventory={"DISK_GB": 100},
        traits=["MISC_SHARES_VIA_AGGREGATE"],
        aggregates=["pool"],
    )
    await trees.provider("host-s1", inventory={"VCPU": 8}, aggregates=["pool", "east"])
    await trees.provider("host-s2", inventory={"VCPU": 8}, aggregates=["pool", "west"])
    await trees.provider("host-d", inventory={"VCPU": 8, "DISK_GB": 60}, aggregates=["west"])
    await trees.allocate({"host-s1": {"VCPU": 1}, "disk-pool": {"DISK_GB": 10}})
    report = await _report(api, "?resources=VCPU:1,DISK_GB:30")
    # The pool has 90 GB free: 3 instances, whichever of s1 and s2 takes them.
    assert _host(report, "host-s1")["fits"] == 3
    assert _host(report, "host-s2")["fits"] == 3
    assert _host(report, "host-d")["fits"] == 2
    assert report["fits"] == 3 + 2
    aggregates = {a["name"] or a["uuid"]: a for a in report["aggregates"]}
    assert aggregates[POOL]["fits"] == 3
    assert aggregates[POOL]["hosts"] == 2
    # Each rack counted alone has the whole pool: s1 takes 3 in east; in
    # west, s2 takes 3 and host-d its own 2.
    assert aggregates["east-racks"]["fits"] == 3
    assert aggregates["west-racks"]["fits"] == 3 + 2
    zones = {z["name"]: z["fits"] for z in report["availability_zones"]}
    assert zones == {"east": 3, "west": 5}
    assert report["sharing_providers"] == [
        {
            "uuid": trees.uuids["disk-pool"],
            "name": "disk-pool",
            "hosts": 2,
            "resources": {
                "DISK_GB": {
                    "total": 100,
                    "reserved": 0,
                    "allocation_ratio": 1.0,
                    "capacity": 100,
                    "used": 10,
                    "free": 90,
                }
            },
        }
    ]
    # The pool's disk is in the cloud's figures, once.
    assert report["resource_classes"]["DISK_GB"]["capacity"] == 160


async def test_traits_and_member_of_choose_the_hosts(api: PlacementClient) -> None:
    trees = _trees(api)
    await trees.provider("host-f", inventory={"VCPU": 4}, traits=["CUSTOM_FAST"])
    await trees.provider("host-g", inventory={"VCPU": 6}, aggregates=["east"])
    await trees.provider(
        "host-h", inventory={"VCPU": 10}, traits=["CUSTOM_FAST"], aggregates=["west"]
    )
    cases = {
        "&required=CUSTOM_FAST": 14,
        "&required=!CUSTOM_FAST": 6,
        f"&member_of={EAST}": 6,
        f"&member_of=in:{EAST},{WEST}": 16,
        f"&member_of=!{WEST}": 10,
        f"&member_of={WEST}&required=CUSTOM_FAST": 10,
        f"&member_of={uuid.uuid4()}": 0,  # no such aggregate: fits nowhere
    }
    for query, fits in cases.items():
        report = await _report(api, f"?resources=VCPU:1{query}")
        assert (query, report["fits"]) == (query, fits)
    forbidden = await _report(api, "?resources=VCPU:1&required=!CUSTOM_FAST")
    assert {h["name"]: h["fits"] for h in forbidden["hosts"]} == {
        "host-f": 0,
        "host-g": 6,
        "host-h": 0,
    }


async def test_zones_come_from_the_aggregates_file_and_the_default_zone(
    api: PlacementClient,
) -> None:
    trees = _trees(api)
    await trees.provider("host-e1", inventory={"VCPU": 4}, aggregates=["east"])
    await trees.provider("host-e2", inventory={"VCPU": 2}, aggregates=["east"])
    await trees.provider("host-w", inventory={"VCPU": 8}, aggregates=["west"])
    await trees.provider("host-x", inventory={"VCPU": 1})
    report = await _report(api, "?resources=VCPU:2&by=az,aggregate")
    assert "hosts" not in report
    assert report["availability_zones"] == [
        {"name": "east", "hosts": 2, "fits": 3, "resources": _summary(6)},
        {"name": "spare", "hosts": 1, "fits": 0, "resources": _summary(1)},
        {"name": "west", "hosts": 1, "fits": 4, "resources": _summary(8)},
    ]
    assert [(a["name"], a["availability_zone"], a["fits"]) for a in report["aggregates"]] == [
        ("east-racks", "east", 3),
        ("west-racks", "west", 4),
    ]
    assert _host(await _report(api), "host-w")["availability_zones"] == ["west"]


def _summary(vcpus: int) -> dict[str, dict[str, Any]]:
    return {
        "VCPU": {
            "total": vcpus,
            "reserved": 0,
            "capacity": vcpus,
            "used": 0,
            "free": vcpus,
            "overcommitted_share": 0.0,
        }
    }


async def test_without_resources_the_report_has_usage_and_no_fits(api: PlacementClient) -> None:
    trees = _trees(api)
    await trees.provider("host-a", inventory={"VCPU": 4}, aggregates=["east"])
    report = await _report(api)
    assert "fits" not in report
    assert "fits" not in report["hosts"][0]
    assert "fits" not in report["aggregates"][0]
    assert "fits" not in report["availability_zones"][0]
    assert report["resource_classes"]["VCPU"]["free"] == 4
    assert "counting" in report


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("?resources=VCPU:0", "requires amount >= 1"),
        ("?resources=VCPU", "Badly formed resources parameter"),
        ("?resources=NOPE:1", "No such resource class NOPE"),
        ("?resources=VCPU:1&required=CUSTOM_NOPE", "No such trait(s): CUSTOM_NOPE"),
        ("?resources=VCPU:1&member_of=not-a-uuid", "valid UUID"),
        ("?resources=VCPU:1&by=rack", "'rack' does not match"),
        ("?resources=VCPU:1&limit=3", "limit"),
        ("?required=CUSTOM_FAST", "need resources"),
        ("?resources=VCPU:1&resources=VCPU:2", "only once"),
    ],
)
async def test_hostile_queries_are_400_in_the_placement_error_body(
    api: PlacementClient, query: str, detail: str
) -> None:
    response = await api.get(f"/capacity{query}")
    assert response.status_code == 400, response.text
    (entry,) = response.json()["errors"]
    assert entry["status"] == 400
    assert detail in entry["detail"]


async def test_only_admins_and_readers_may_read_it(api: PlacementClient) -> None:
    member = await api.get(
        "/capacity", headers={"X-Auth-Token": "user:project", "X-Roles": "member"}
    )
    reader = await api.get(
        "/capacity", headers={"X-Auth-Token": "user:project", "X-Roles": "reader"}
    )
    assert (member.status_code, reader.status_code) == (403, 200)
