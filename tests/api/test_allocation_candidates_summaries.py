"""Provider summaries of GET /allocation_candidates, whichever way they are read.

On PostgreSQL a small scope is read by one statement probing by id and a
large one part by part (from whole tables when PostgreSQL's estimate says it
covers most providers, after ANALYZE), on a second connection while the
search runs or, when the pool has no connection to spare, after it; each
test runs every way, and all must say the same. Layout: two hosts, each with
a NUMA child holding the CPU and memory; a standalone disk provider "ss"
shares through aggregate "a"; "idle" has inventory no request here uses.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from placement_api.db.engine import create_engine
from placement_api.domain.candidates import summary_rows
from placement_api.settings import Settings
from tests.api.test_allocation_candidates import get_ok
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

NUMA = {
    "VCPU": {"total": 8, "allocation_ratio": 4.0, "reserved": 1},
    "MEMORY_MB": {"total": 4096, "allocation_ratio": 1.5},
}
REQUEST = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512"


@pytest.fixture(
    params=[
        "ahead, probed in one",
        "ahead, whole tables",
        "after the search, probed in one",
        "after the search, part by part",
    ]
)
def read_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    way: str = request.param
    if way.endswith("part by part"):
        monkeypatch.setattr(summary_rows, "PROBED_IN_ONE", 0)
    elif way.endswith("whole tables"):
        # However little of the table the scope covers.
        monkeypatch.setattr(summary_rows, "WHOLE_TABLE_SHARE", 1e-9)
    else:
        # However much of the (tiny) table the scope covers.
        monkeypatch.setattr(summary_rows, "WHOLE_TABLE_SHARE", 1e9)
    return way


@pytest.fixture
def settings(database_url: str, read_way: str) -> Settings:
    # With one pooled connection, the request's own, none is left to read ahead on.
    pool_size = 1 if read_way.startswith("after") else 10
    # The database path's ways of reading summaries (the index's are
    # compared with it in test_candidates_index*).
    return Settings(
        database_url=database_url,
        enforce_new_defaults=False,
        database_pool_size=pool_size,
        candidates_index=False,
    )


@pytest.fixture
async def trees(api: PlacementClient, settings: Settings, backend: str) -> TreeBuilder:
    tree = TreeBuilder(api)
    for host in ("h1", "h2"):
        await tree.provider(host, traits=["HW_CPU_X86_AVX2", "COMPUTE_NODE"], aggregates=["a"])
        await tree.provider(f"{host}_numa", parent=host, inventory=NUMA, traits=["CUSTOM_NUMA"])
    await tree.provider(
        "ss",
        inventory={"DISK_GB": {"total": 1000, "reserved": 100}},
        traits=["MISC_SHARES_VIA_AGGREGATE"],
        aggregates=["a"],
    )
    await tree.provider("idle", inventory={"CUSTOM_IDLE": 3})
    await tree.allocate({"h1_numa": {"VCPU": 2, "MEMORY_MB": 1024}})
    if backend == "postgresql":
        engine = create_engine(settings.database_url)
        try:
            async with engine.begin() as connection:
                await connection.execute(text("ANALYZE resource_providers"))
        finally:
            await engine.dispose()
    return tree


def by_name(tree: TreeBuilder, body: dict[str, Any]) -> dict[str, Any]:
    return {tree.name_of(uuid): summary for uuid, summary in body["provider_summaries"].items()}


async def test_summaries_of_every_tree_say_what_is_stored(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    summaries = by_name(trees, await get_ok(api, REQUEST + ",DISK_GB:10"))
    assert set(summaries) == {"h1", "h1_numa", "h2", "h2_numa", "ss"}
    assert summaries["h1_numa"] == {
        "resources": {
            "VCPU": {"capacity": 28, "used": 2},
            "MEMORY_MB": {"capacity": 6144, "used": 1024},
        },
        "traits": ["CUSTOM_NUMA"],
        "parent_provider_uuid": trees.uuids["h1"],
        "root_provider_uuid": trees.uuids["h1"],
    }
    assert summaries["h2_numa"]["resources"]["VCPU"] == {"capacity": 28, "used": 0}
    assert summaries["h1"] == {
        "resources": {},
        "traits": summaries["h1"]["traits"],
        "parent_provider_uuid": None,
        "root_provider_uuid": trees.uuids["h1"],
    }
    assert set(summaries["h1"]["traits"]) == {"HW_CPU_X86_AVX2", "COMPUTE_NODE"}
    assert summaries["ss"] == {
        "resources": {"DISK_GB": {"capacity": 900, "used": 0}},
        "traits": ["MISC_SHARES_VIA_AGGREGATE"],
        "parent_provider_uuid": None,
        "root_provider_uuid": trees.uuids["ss"],
    }


async def test_summaries_of_a_few_match_summaries_of_all(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    everything = by_name(trees, await get_ok(api, REQUEST))
    assert set(everything) == {"h1", "h1_numa", "h2", "h2_numa"}
    few = by_name(trees, await get_ok(api, REQUEST + "&limit=1"))
    assert len(few) == 2
    assert few == {name: everything[name] for name in few}


async def test_summaries_of_the_first_trees_a_filter_leaves(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    """With a limit, a filter leaving few providers has the summaries of
    its first trees read while the search runs."""
    request = f"{REQUEST}&member_of={trees.aggregate('a')}"
    everything = by_name(trees, await get_ok(api, request))
    assert set(everything) == {"h1", "h1_numa", "h2", "h2_numa"}
    few = by_name(trees, await get_ok(api, request + "&limit=1"))
    assert len(few) == 2
    assert few == {name: everything[name] for name in few}


async def test_summaries_before_1_27_show_only_the_requested_classes(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, "/allocation_candidates?resources=VCPU:1", version="1.26")
    summaries = by_name(trees, body)
    assert summaries["h2_numa"] == {
        "resources": {"VCPU": {"capacity": 28, "used": 0}},
        "traits": ["CUSTOM_NUMA"],
    }


async def test_summaries_before_1_17_have_no_traits(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    body = await get_ok(api, REQUEST + ",DISK_GB:10", version="1.16")
    summaries = by_name(trees, body)
    assert summaries["ss"] == {"resources": {"DISK_GB": {"capacity": 900, "used": 0}}}
    assert summaries["h1_numa"]["resources"]["MEMORY_MB"] == {"capacity": 6144, "used": 1024}


async def test_classes_and_traits_made_after_a_request_are_named(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    """Names are remembered across requests (PostgreSQL): ones made later
    are read when first met."""
    await get_ok(api, REQUEST)
    await trees.set_traits("h2_numa", ["CUSTOM_NUMA", "CUSTOM_MADE_LATER"])
    await trees.set_inventory("h2_numa", {**NUMA, "CUSTOM_LATER": 2})
    summaries = by_name(trees, await get_ok(api, REQUEST))
    assert set(summaries["h2_numa"]["traits"]) == {"CUSTOM_NUMA", "CUSTOM_MADE_LATER"}
    assert summaries["h2_numa"]["resources"]["CUSTOM_LATER"] == {"capacity": 2, "used": 0}


async def test_a_capacity_beyond_64_bits_is_shown_as_the_largest_one(
    api: PlacementClient, trees: TreeBuilder
) -> None:
    await trees.provider(
        "vast", inventory={"CUSTOM_VAST": {"total": 2_000_000_000, "allocation_ratio": 1e30}}
    )
    body = await get_ok(api, "/allocation_candidates?resources=CUSTOM_VAST:5")
    assert by_name(trees, body)["vast"]["resources"] == {
        "CUSTOM_VAST": {"capacity": 2**63 - 1024, "used": 0}
    }


async def test_summaries_of_trees_past_the_first_ones_tried(api: PlacementClient) -> None:
    """Summaries of the first trees the search will try are read while it
    runs (one candidate per tree is the guess); trees used beyond those are
    read after it."""
    tree = TreeBuilder(api)
    for index in range(3):
        await tree.provider(f"cpu_only{index}", inventory={"VCPU": 4})
    await tree.provider("full", inventory={"VCPU": 4, "MEMORY_MB": 1024})
    body = await get_ok(api, REQUEST + "&limit=1")
    assert by_name(tree, body) == {
        "full": {
            "resources": {
                "VCPU": {"capacity": 4, "used": 0},
                "MEMORY_MB": {"capacity": 1024, "used": 0},
            },
            "traits": [],
            "parent_provider_uuid": None,
            "root_provider_uuid": tree.uuids["full"],
        }
    }
