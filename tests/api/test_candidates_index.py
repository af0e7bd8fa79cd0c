"""The provider index answers a flat cloud's candidates exactly as the
database path does, and stays current through every kind of write.

Each test serves one database through two apps: ``api`` with the index (as
shipped) and one with ``candidates_index`` off, and compares their answers
byte for byte over random clouds and requests, at several microversions.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.domain.candidates import index_tables, provider_index
from placement_api.domain.candidates.provider_index import SEQUENCE_AFTER, ProviderIndex
from placement_api.settings import Settings
from tests.support.client import PlacementClient, app_client
from tests.support.index_answers import (
    AGGREGATES,
    TRAITS,
    answered,
    database_only,
    indexed_app,
    random_queries,
    same_answers,
    same_answers_after_each,
)
from tests.support.provider_trees import TreeBuilder


def _inventory(rng: random.Random) -> dict[str, Any]:
    inventory: dict[str, Any] = {
        "VCPU": {
            "total": rng.choice([4, 8, 16]),
            "reserved": rng.choice([0, 0, 1]),
            "allocation_ratio": rng.choice([1.0, 1.5, 16.0]),
            "max_unit": rng.choice([4, 8, 16]),
        },
        "MEMORY_MB": {
            "total": rng.choice([4096, 8192, 16384]),
            "reserved": rng.choice([0, 512]),
            "step_size": rng.choice([1, 1, 256]),
            "min_unit": rng.choice([1, 256]),
            "max_unit": 16384,
        },
    }
    if rng.random() < 0.7:
        inventory["DISK_GB"] = {"total": rng.choice([100, 500]), "allocation_ratio": 1.3}
    return inventory


async def _cloud(api: PlacementClient, rng: random.Random, hosts: int) -> TreeBuilder:
    tree = TreeBuilder(api)
    for number in range(hosts):
        await tree.provider(
            f"cn{number}",
            inventory=_inventory(rng),
            traits=rng.sample(TRAITS, rng.randint(0, 2)),
            aggregates=rng.sample(AGGREGATES, rng.randint(0, 2)),
        )
    for number in rng.sample(range(hosts), hosts // 2):
        await tree.allocate({f"cn{number}": {"VCPU": rng.randint(1, 4), "MEMORY_MB": 1024}})
    return tree


async def test_a_flat_cloud_is_answered_from_the_index_as_from_the_database(
    api: PlacementClient, settings: Settings
) -> None:
    rng = random.Random(29)
    tree = await _cloud(api, rng, hosts=24)
    queries = random_queries(rng, tree, 40, list(tree.uuids))
    before = answered("index")
    async with database_only(settings) as database:
        await same_answers(api, database, queries)
    assert answered("index") - before >= len(queries)


async def test_the_index_follows_every_kind_of_write(
    indexed: tuple[PlacementClient, ProviderIndex], settings: Settings
) -> None:
    api, index = indexed
    # A first read of the feed gives a new database its epoch now, not midway.
    assert (await api.get("/changes", version="1.39")).status_code == 200
    rng = random.Random(7)
    tree = await _cloud(api, rng, hosts=8)
    queries = random_queries(rng, tree, 12, list(tree.uuids))
    writes: list[Callable[[], Awaitable[object]]] = [
        lambda: tree.allocate({"cn1": {"VCPU": 3, "MEMORY_MB": 2048}}),
        lambda: tree.set_inventory("cn2", {"VCPU": 2, "MEMORY_MB": 512}),
        lambda: tree.set_traits("cn3", ["CUSTOM_GPU", "CUSTOM_NEW_TRAIT"]),
        lambda: tree.set_aggregates("cn4", ["c", "d"]),
        lambda: tree.provider("cn9", inventory=_inventory(rng), traits=["HW_CPU_X86_AVX2"]),
        lambda: api.delete(f"/resource_providers/{tree.uuids['cn5']}"),
        lambda: _custom_class_inventory(api, tree, "cn6"),
    ]
    async with database_only(settings) as database:
        await same_answers_after_each(
            api, database, queries, writes, lambda: random_queries(rng, tree, 3, list(tree.uuids))
        )
        consumer = await tree.allocate({"cn7": {"VCPU": 1, "MEMORY_MB": 256}})
        await same_answers(api, database, queries)
        deleted = await api.delete(f"/allocations/{consumer}")
        assert deleted.status_code == 204
        await same_answers(api, database, queries)
    # Each write was applied by itself, never by loading everything again.
    assert index.full_loads == 1


async def _custom_class_inventory(api: PlacementClient, tree: TreeBuilder, name: str) -> None:
    created = await api.put("/resource_classes/CUSTOM_FPGA", version="1.7")
    assert created.status_code in (201, 204), created.text
    await tree.set_inventory(name, {"VCPU": 8, "MEMORY_MB": 8192, "CUSTOM_FPGA": 2})
    consumer = str(uuid.uuid4())
    claim = await api.put(
        f"/allocations/{consumer}",
        version="1.28",
        json={
            "allocations": {tree.uuids[name]: {"resources": {"CUSTOM_FPGA": 1}}},
            "project_id": str(uuid.uuid4()),
            "user_id": str(uuid.uuid4()),
            "consumer_generation": None,
        },
    )
    assert claim.status_code == 204, claim.text


@pytest.mark.parametrize(
    "query",
    [
        "resources1=VCPU:1&resources2=MEMORY_MB:256&group_policy=none",
        "resources=VCPU:1&resources1=MEMORY_MB:256&resources2=DISK_GB:10"
        "&group_policy=none&same_subtree=1,2",
        "resources=VCPU:1&resources1=MEMORY_MB:256&group_policy=isolate",
    ],
)
async def test_requests_beyond_one_unsuffixed_group_are_read_from_the_database(
    api: PlacementClient, settings: Settings, query: str
) -> None:
    await _cloud(api, random.Random(3), hosts=4)
    before = answered("index"), answered("database")
    async with database_only(settings) as database:
        await same_answers(api, database, [f"/allocation_candidates?{query}"])
    assert answered("index") == before[0]
    assert answered("database") > before[1]


async def test_shuffled_answers_are_read_from_the_database(
    settings: Settings, cleaned: None
) -> None:
    shuffled = settings.model_copy(update={"randomize_allocation_candidates": True})
    async with app_client(shuffled) as api:
        await _cloud(api, random.Random(4), hosts=3)
        before = answered("index")
        response = await api.get("/allocation_candidates?resources=VCPU:1", version="1.39")
        assert response.status_code == 200
        assert len(response.json()["allocation_requests"]) == 3
        assert answered("index") == before


async def test_unknown_names_get_the_database_paths_errors(api: PlacementClient) -> None:
    await _cloud(api, random.Random(5), hosts=2)
    response = await api.get("/allocation_candidates?resources=VCPU:1&required=CUSTOM_NOPE")
    assert response.status_code == 400
    assert "No such trait(s): CUSTOM_NOPE" in response.text


async def test_a_crowd_of_unindexed_entries_is_indexed_by_the_refresh(
    api: PlacementClient, backend: str, cleaner: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also by the refresh that loads the index whole, behind more indexed
    entries than a refresh reads at once (it needs none of those)."""
    if backend != "postgresql":
        pytest.skip("SQLite indexes entries as they are written")
    monkeypatch.setattr(provider_index, "MOST_ENTRIES", SEQUENCE_AFTER + 10)
    tree = TreeBuilder(api)
    await tree.provider("solo", inventory={"VCPU": 1000})
    for _ in range(SEQUENCE_AFTER + 20):
        await tree.allocate({"solo": {"VCPU": 1}})
    # Reading the feed indexes every entry so far.
    assert (await api.get("/changes", version="1.39")).status_code == 200
    for _ in range(SEQUENCE_AFTER + 5):
        await tree.allocate({"solo": {"VCPU": 1}})
    unindexed = text("SELECT count(*) FROM changes WHERE feed_index IS NULL")
    async with cleaner.connect() as connection:
        assert (await connection.execute(unindexed)).scalar_one() > SEQUENCE_AFTER
    response = await api.get("/allocation_candidates?resources=VCPU:1")
    assert response.status_code == 200
    async with cleaner.connect() as connection:
        assert (await connection.execute(unindexed)).scalar_one() == 0


@pytest.mark.parametrize("cap", [0, 2])
async def test_the_candidates_cap_bounds_the_index_as_the_database(
    settings: Settings, cleaned: None, cap: int
) -> None:
    capped = settings.model_copy(update={"max_allocation_candidates": cap})
    async with app_client(capped) as api, database_only(capped) as database:
        await _cloud(api, random.Random(13), hosts=6)
        before = answered("index")
        await same_answers(api, database, ["/allocation_candidates?resources=VCPU:1"])
        assert answered("index") > before


async def test_the_sweep_sees_a_write_made_by_hand_without_reloading(
    settings: Settings, cleaner: AsyncEngine, cleaned: None
) -> None:
    """Hand-written SQL records no feed entry: the sweep re-reads the
    provider within ``max_age``, by itself (no whole reload)."""
    swept = settings.model_copy(update={"candidates_index_max_age": 0.3})
    async with indexed_app(swept) as (api, index), database_only(swept) as database:
        tree = TreeBuilder(api)
        for name in ("cn0", "cn1", "cn2"):
            await tree.provider(name, inventory={"VCPU": 8})
        # Every entry indexed (the first read gives the feed its epoch), so
        # that no refresh re-reads cn1 for an entry not indexed yet.
        for _ in range(2):
            assert (await api.get("/changes", version="1.39")).status_code == 200
        query = "/allocation_candidates?resources=VCPU:1"
        await same_answers(api, database, [query])
        assert tree.uuids["cn1"] in (await api.get(query)).text
        by_hand = text(
            "UPDATE inventories SET total = 0 WHERE resource_provider_id = "
            "(SELECT id FROM resource_providers WHERE uuid = :uuid)"
        )
        async with cleaner.begin() as connection:
            await connection.execute(by_hand, {"uuid": tree.uuids["cn1"]})
        await asyncio.sleep(0.4)
        await api.get(query)  # the sweep's step re-reads cn1 before this answer
        await same_answers(api, database, [query])
        found = (await api.get(query)).json()["allocation_requests"]
        assert all(tree.uuids["cn1"] not in r["allocations"] for r in found)
        assert index.full_loads == 1


async def test_requests_read_the_database_while_a_worker_loads_its_index(
    settings: Settings, cleaned: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with indexed_app(settings) as (api, index):
        await _cloud(api, random.Random(19), hosts=2)
        loading, release = asyncio.Event(), asyncio.Event()
        read_rows = index_tables.provider_rows

        async def slow_rows(*args: Any, **kwargs: Any) -> Any:
            loading.set()
            await release.wait()
            return await read_rows(*args, **kwargs)

        monkeypatch.setattr(provider_index, "provider_rows", slow_rows)
        query = "/allocation_candidates?resources=VCPU:1"
        first = asyncio.create_task(api.get(query))
        await loading.wait()
        before = answered("index"), answered("database")
        # Not held up by the load (without a bound, a wait would last for ever).
        meanwhile = await asyncio.wait_for(api.get(query), 10)
        assert meanwhile.status_code == 200
        assert (answered("index"), answered("database")) == (before[0], before[1] + 1)
        release.set()
        assert (await first).content == meanwhile.content
        assert answered("index") == before[0] + 1
        assert index.full_loads == 1
