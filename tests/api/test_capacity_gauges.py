"""The capacity report's gauges on /metrics, beside the exporter-compatible ones."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from placement_api.settings import Settings
from tests.api.test_observability import scrape, value
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

EAST = str(uuid.uuid4())


@pytest.fixture
def interval() -> float:
    """Gauges recomputed at every scrape (a test parametrizes it to change that)."""
    return 0.0


@pytest.fixture
def settings(database_url: str, tmp_path: Path, interval: float) -> Settings:
    aggregates = tmp_path / "aggregates.yaml"
    aggregates.write_text(
        yaml.safe_dump({"aggregates": {EAST: {"name": "east-racks", "availability_zone": "east"}}})
    )
    flavors = tmp_path / "flavors.yaml"
    flavors.write_text(
        yaml.safe_dump(
            {
                "small": {"vcpus": 1, "memory_mb": 512},
                "large": {"vcpus": 4, "memory_mb": 2048},
                # No such class in the database: left out, the others still reported.
                "odd": {"vcpus": 1, "memory_mb": 1, "extra_specs": {"resources:CUSTOM_NOPE": "1"}},
            }
        )
    )
    return Settings(
        database_url=database_url,
        enforce_new_defaults=False,
        metrics_enabled=True,
        capacity_aggregates_file=aggregates,
        capacity_flavors_file=flavors,
        capacity_metrics_interval=interval,
    )


async def _cloud(api: PlacementClient) -> TreeBuilder:
    """east: 8 VCPU, 4096 MB (1024 used); the other host, zone nova: 2 VCPU, 8192 MB."""
    trees = TreeBuilder(api)
    trees.aggregates["east"] = EAST
    await trees.provider("host-e", inventory={"VCPU": 8, "MEMORY_MB": 4096}, aggregates=["east"])
    await trees.provider("host-n", inventory={"VCPU": 2, "MEMORY_MB": 8192})
    await trees.allocate({"host-e": {"VCPU": 1, "MEMORY_MB": 1024}})
    return trees


async def test_fits_per_flavor_and_free_per_class_are_gauges(api: PlacementClient) -> None:
    await _cloud(api)
    samples = await scrape(api)
    fits = "placement_capacity_fits"
    # small: east min(7, 6) = 6, nova min(2, 16) = 2; large: east min(1, 1), nova 0.
    assert value(samples, fits, flavor="small") == 8
    assert value(samples, fits, flavor="large") == 1
    assert not any(labels and ("flavor", "odd") in labels for _, labels in samples)
    east = {"aggregate": EAST, "aggregate_name": "east-racks", "availability_zone": "east"}
    assert value(samples, "placement_capacity_aggregate_fits", flavor="small", **east) == 6
    zone_fits = "placement_capacity_zone_fits"
    assert value(samples, zone_fits, flavor="small", availability_zone="nova") == 2
    assert value(samples, "placement_capacity_free", resource_class="VCPU") == 9
    assert value(samples, "placement_capacity_capacity", resource_class="MEMORY_MB") == 12288
    zone_free = "placement_capacity_zone_free"
    assert value(samples, zone_free, availability_zone="east", resource_class="MEMORY_MB") == 3072
    # The exporter-compatible gauges are still there.
    labels = {"hostname": "host-e", "resourcetype": "VCPU"}
    assert value(samples, "openstack_placement_resource_usage", **labels) == 1


@pytest.mark.parametrize("interval", [3600.0])
async def test_gauges_are_reused_within_the_interval(api: PlacementClient) -> None:
    trees = await _cloud(api)
    before = await scrape(api)
    await trees.allocate({"host-n": {"VCPU": 2}})
    after = await scrape(api)
    assert value(after, "placement_capacity_fits", flavor="small") == 8
    assert value(after, "placement_capacity_free", resource_class="VCPU") == value(
        before, "placement_capacity_free", resource_class="VCPU"
    )
    # The exporter-compatible gauges are read at every scrape.
    labels = {"hostname": "host-n", "resourcetype": "VCPU"}
    assert value(after, "openstack_placement_resource_usage", **labels) == 2


async def test_gauges_follow_usage_without_an_interval(api: PlacementClient) -> None:
    trees = await _cloud(api)
    await scrape(api)
    await trees.allocate({"host-n": {"VCPU": 2}})
    assert value(await scrape(api), "placement_capacity_fits", flavor="small") == 6


async def test_a_disabled_host_is_left_out_of_the_gauges_and_counted_apart(
    api: PlacementClient,
) -> None:
    trees = await _cloud(api)
    await trees.set_traits("host-n", ["COMPUTE_STATUS_DISABLED"])
    samples = await scrape(api)
    # small: east's 6 only; host-n's 2 are counted apart.
    assert value(samples, "placement_capacity_fits", flavor="small") == 6
    assert value(samples, "placement_capacity_unavailable_fits", flavor="small") == 2
    assert value(samples, "placement_capacity_unavailable_hosts", state="disabled") == 1
    assert value(samples, "placement_capacity_unavailable_hosts", state="down") == 0
    assert value(samples, "placement_capacity_capacity", resource_class="VCPU") == 8
