"""The provider index answers a cloud of trees (nested providers, sharing
providers) exactly as the database path does, and follows the writes that
change trees: providers coming, going and moving, aggregates that change
which trees a sharing provider serves."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from placement_api.domain.candidates import windowing
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.domain.candidates.windowing import WindowPolicy
from placement_api.settings import Settings
from tests.support.client import PlacementClient
from tests.support.index_answers import (
    AGGREGATES,
    TRAITS,
    answered,
    database_only,
    random_queries,
    same_answers,
    same_answers_after_each,
)
from tests.support.provider_trees import TreeBuilder

SHARES = ["MISC_SHARES_VIA_AGGREGATE"]


class Cloud:
    """Random trees: hosts with NUMA children (some with a device below),
    disk on some roots, two sharing disk providers; what each provider holds."""

    def __init__(self, api: PlacementClient, rng: random.Random) -> None:
        self.tree = TreeBuilder(api)
        self.rng = rng
        self.roots: list[str] = []
        self.held: dict[str, list[str]] = {}

    async def add(self, name: str, parent: str | None, inventory: dict[str, Any]) -> None:
        rng = self.rng
        await self.tree.provider(
            name,
            parent=parent,
            inventory=inventory,
            traits=rng.sample(TRAITS, rng.randint(0, 2 if parent is None else 1)),
            aggregates=rng.sample(AGGREGATES, rng.randint(0, 2)) if rng.random() < 0.5 else [],
        )
        self.held[name] = list(inventory)
        if parent is None:
            self.roots.append(name)

    async def host(self, number: int) -> None:
        rng, name = self.rng, f"cn{number}"
        root: dict[str, Any] = {}
        if rng.random() < 0.5:
            root["DISK_GB"] = {"total": rng.choice([100, 500]), "allocation_ratio": 1.3}
        if rng.random() < 0.2:
            root["VCPU"] = {"total": 4, "max_unit": 4}
        await self.add(name, None, root)
        for numa in range(rng.randint(0, 2)):
            child = f"{name}-numa{numa}"
            await self.add(child, name, _numa_inventory(rng))
            if rng.random() < 0.3:
                await self.add(f"{child}-dev", child, {"MEMORY_MB": 1024})

    async def sharing(self, number: int, aggregates: list[str], trait: str) -> None:
        name = f"shared{number}"
        inventory = {"DISK_GB": {"total": self.rng.choice([400, 1000])}}
        await self.tree.provider(
            name,
            inventory=inventory,
            traits=[*SHARES, trait],
            aggregates=aggregates,
        )
        self.held[name] = list(inventory)
        self.roots.append(name)

    async def use(self, count: int) -> None:
        holders = [name for name, classes in self.held.items() if classes]
        for name in self.rng.sample(holders, min(count, len(holders))):
            amounts = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 40}
            await self.tree.allocate({name: {c: amounts[c] for c in self.held[name]}})


def _numa_inventory(rng: random.Random) -> dict[str, Any]:
    return {
        "VCPU": {"total": rng.choice([4, 8]), "allocation_ratio": rng.choice([1.0, 4.0])},
        "MEMORY_MB": {
            "total": rng.choice([2048, 4096]),
            "step_size": rng.choice([1, 256]),
            "max_unit": 4096,
        },
    }


async def _cloud(api: PlacementClient, rng: random.Random, hosts: int) -> Cloud:
    cloud = Cloud(api, rng)
    # Asked for by member_of=a, it serves trees of c too.
    await cloud.sharing(0, ["a", "c"], "HW_CPU_X86_SSE")
    for number in range(hosts):
        await cloud.host(number)
    # Its own tree fails root_required=!COMPUTE_STATUS_DISABLED; the trees it serves need not.
    await cloud.sharing(1, ["b"], "COMPUTE_STATUS_DISABLED")
    # A child created after later trees: its tree's ids are not contiguous.
    await cloud.add("cn0-late", "cn0", _numa_inventory(rng))
    await cloud.use(hosts)
    return cloud


def _served_by_sharing(tree: TreeBuilder) -> list[str]:
    """Requests sharing providers alone can meet, under each tree-level rule."""
    disk = "/allocation_candidates?resources=DISK_GB:10"
    return [
        disk,
        f"{disk}&root_required=!COMPUTE_STATUS_DISABLED",
        f"{disk}&root_required=HW_CPU_X86_AVX2",
        f"{disk}&member_of=!{tree.aggregate('a')}",
        f"{disk}&member_of=!{tree.aggregate('c')}",
        f"{disk}&member_of={tree.aggregate('b')}",
        f"{disk}&member_of={tree.aggregate('a')}",
        f"{disk}&required=HW_CPU_X86_SSE&limit=3",
        f"{disk},VCPU:1,MEMORY_MB:256&required=HW_CPU_X86_AVX2",
    ]


async def test_a_cloud_of_trees_is_answered_from_the_index_as_from_the_database(
    api: PlacementClient, settings: Settings
) -> None:
    rng = random.Random(2029)
    cloud = await _cloud(api, rng, hosts=14)
    # A tree shared1 serves (through b), in an aggregate a request may forbid.
    await cloud.tree.set_aggregates("cn1", ["b", "c"])
    # A tree shared0 serves, with a trait no sharing provider has.
    await cloud.add("cn2-extra", "cn2", _numa_inventory(rng))
    await cloud.tree.set_traits("cn2-extra", ["HW_CPU_X86_AVX2"])
    await cloud.tree.set_aggregates("cn2", ["a"])
    queries = [*_served_by_sharing(cloud.tree), *random_queries(rng, cloud.tree, 60, cloud.roots)]
    before = answered("index")
    async with database_only(settings) as database:
        await same_answers(api, database, queries)
    assert answered("index") - before >= len(queries)


async def _move(api: PlacementClient, tree: TreeBuilder, name: str, parent: str) -> None:
    """Reparent ``name`` under ``parent`` (microversion 1.37)."""
    provider = tree.uuids[name]
    current = await api.get(f"/resource_providers/{provider}", version="1.37")
    moved = await api.put(
        f"/resource_providers/{provider}",
        version="1.37",
        json={"name": current.json()["name"], "parent_provider_uuid": tree.uuids[parent]},
    )
    assert moved.status_code == 200, moved.text


async def test_the_index_follows_the_writes_that_change_trees(
    indexed: tuple[PlacementClient, ProviderIndex], settings: Settings
) -> None:
    api, index = indexed
    # A first read of the feed gives a new database its epoch now, not midway.
    assert (await api.get("/changes", version="1.39")).status_code == 200
    rng = random.Random(11)
    cloud = await _cloud(api, rng, hosts=6)
    tree = cloud.tree
    queries = random_queries(rng, tree, 12, cloud.roots)
    writes: list[Callable[[], Awaitable[object]]] = [
        lambda: tree.allocate({"cn0-late": {"VCPU": 3, "MEMORY_MB": 1024}}),
        lambda: tree.set_inventory("cn0-late", {"VCPU": 2, "MEMORY_MB": 8192}),
        lambda: tree.set_traits("cn0-late", ["HW_CPU_X86_AVX2"]),
        lambda: tree.set_aggregates("cn1", ["a", "b"]),
        lambda: tree.set_aggregates("shared1", ["c"]),
        lambda: cloud.add("cn2-new", "cn2", _numa_inventory(rng)),
        lambda: _move(api, tree, "cn2-new", "cn3"),
        lambda: api.delete(f"/resource_providers/{tree.uuids['cn2-new']}"),
        lambda: tree.set_traits("cn4", ["COMPUTE_STATUS_DISABLED"]),
    ]
    async with database_only(settings) as database:
        await same_answers_after_each(
            api, database, queries, writes, lambda: random_queries(rng, tree, 3, ["cn0"])
        )
    # Each write was applied by itself, never by loading everything again.
    assert index.full_loads == 1


async def test_a_limited_answer_is_the_start_of_the_full_one_window_by_window(
    api: PlacementClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows of one or two trees: each answer with a limit is the first
    candidates of the answer without one, which the database path gives too."""
    monkeypatch.setattr(
        windowing, "POLICY", WindowPolicy(per_candidate=0.5, min_window=1, max_window=2)
    )
    rng = random.Random(31)
    cloud = await _cloud(api, rng, hosts=10)
    queries = [
        *_served_by_sharing(cloud.tree),
        *random_queries(rng, cloud.tree, 30, cloud.roots),
    ]
    full_answers = sorted({query.split("&limit=")[0] for query in queries})
    async with database_only(settings) as database:
        await same_answers(api, database, full_answers)
    before = answered("index")
    for query in full_answers:
        full = (await api.get(query)).json()["allocation_requests"]
        for limit in (1, 2, 3, 5):
            limited = await api.get(f"{query}&limit={limit}")
            assert limited.json()["allocation_requests"] == full[:limit], (query, limit)
    assert answered("index") - before == 5 * len(full_answers)


async def test_a_sharing_provider_is_reached_through_trees_no_filter_names(
    api: PlacementClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked for by member_of=a, the sharing provider also serves the trees
    of c, whose roots alone may meet root_required: windows of one tree of
    a's members each still cover the trees before, between and after them."""
    monkeypatch.setattr(
        windowing, "POLICY", WindowPolicy(per_candidate=0.5, min_window=1, max_window=1)
    )
    tree = TreeBuilder(api)
    await tree.provider("in-c", traits=["HW_CPU_X86_AVX2"], aggregates=["c"])
    await tree.provider(
        "in-a", inventory={"DISK_GB": 100}, traits=["HW_CPU_X86_AVX2"], aggregates=["a"]
    )
    await tree.provider("shared", inventory={"DISK_GB": 100}, traits=SHARES, aggregates=["a", "c"])
    await tree.provider("in-c-last", traits=["CUSTOM_GPU"], aggregates=["c"])
    disk = f"/allocation_candidates?resources=DISK_GB:10&member_of={tree.aggregate('a')}"
    expected = {
        # Anchored first at in-c, before in-a's own disk.
        f"{disk}&root_required=HW_CPU_X86_AVX2&limit=2": [["shared"], ["in-a"]],
        # Only in-c-last, after every member of a, may anchor it.
        f"{disk}&root_required=CUSTOM_GPU&limit=1": [["shared"]],
    }
    async with database_only(settings) as database:
        await same_answers(api, database, list(expected))
    for query, providers in expected.items():
        found = (await api.get(query)).json()["allocation_requests"]
        assert [[tree.name_of(u) for u in r["allocations"]] for r in found] == providers
