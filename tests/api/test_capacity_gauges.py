"""The capacity report's gauges on /metrics, beside the exporter-compatible ones."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from httpx import ASGITransport, AsyncClient

from placement_api.app import create_app
from placement_api.settings import Settings
from tests.api.test_observability import _clean, scrape, value
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

EAST = str(uuid.uuid4())


def _settings(settings: Settings, directory: Path, interval: float) -> Settings:
    aggregates = directory / "aggregates.yaml"
    aggregates.write_text(
        yaml.safe_dump({"aggregates": {EAST: {"name": "east-racks", "availability_zone": "east"}}})
    )
    flavors = directory / "flavors.yaml"
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
    return settings.model_copy(
        update={
            "metrics_enabled": True,
            "capacity_aggregates_file": aggregates,
            "capacity_flavors_file": flavors,
            "capacity_metrics_interval": interval,
        }
    )


async def _client(settings: Settings) -> AsyncIterator[PlacementClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://placement") as http:
            yield PlacementClient(http)
    await _clean(settings.database_url)


@pytest.fixture
async def gauged(settings: Settings, tmp_path: Path) -> AsyncIterator[PlacementClient]:
    """Gauges recomputed at every scrape."""
    async for client in _client(_settings(settings, tmp_path, 0)):
        yield client


@pytest.fixture
async def cached(settings: Settings, tmp_path: Path) -> AsyncIterator[PlacementClient]:
    """Gauges kept for an hour."""
    async for client in _client(_settings(settings, tmp_path, 3600)):
        yield client


async def _cloud(api: PlacementClient) -> TreeBuilder:
    """east: 8 VCPU, 4096 MB (1024 used); the other host, zone nova: 2 VCPU, 8192 MB."""
    trees = TreeBuilder(api)
    trees.aggregates["east"] = EAST
    await trees.provider("host-e", inventory={"VCPU": 8, "MEMORY_MB": 4096}, aggregates=["east"])
    await trees.provider("host-n", inventory={"VCPU": 2, "MEMORY_MB": 8192})
    await trees.allocate({"host-e": {"VCPU": 1, "MEMORY_MB": 1024}})
    return trees


async def test_fits_per_flavor_and_free_per_class_are_gauges(gauged: PlacementClient) -> None:
    await _cloud(gauged)
    samples = await scrape(gauged)
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


async def test_gauges_are_reused_within_the_interval(cached: PlacementClient) -> None:
    trees = await _cloud(cached)
    before = await scrape(cached)
    await trees.allocate({"host-n": {"VCPU": 2}})
    after = await scrape(cached)
    assert value(after, "placement_capacity_fits", flavor="small") == 8
    assert value(after, "placement_capacity_free", resource_class="VCPU") == value(
        before, "placement_capacity_free", resource_class="VCPU"
    )
    # The exporter-compatible gauges are read at every scrape.
    labels = {"hostname": "host-n", "resourcetype": "VCPU"}
    assert value(after, "openstack_placement_resource_usage", **labels) == 2


async def test_gauges_follow_usage_without_an_interval(gauged: PlacementClient) -> None:
    trees = await _cloud(gauged)
    await scrape(gauged)
    await trees.allocate({"host-n": {"VCPU": 2}})
    assert value(await scrape(gauged), "placement_capacity_fits", flavor="small") == 6
