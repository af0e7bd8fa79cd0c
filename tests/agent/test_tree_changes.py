"""The agent's tree changing shape, with allocations present: libvirt's test:///default
host (16 CPUs in two NUMA cells of 8) and a real Placement API server."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from agent.discovery import HostFacts
from agent.reporting_pass import Outcome, PassResult, discover
from agent.settings import AgentSettings
from tests.agent.conftest import one_pass
from tests.agent.test_conflicts_and_ownership import allocate
from tests.agent.test_reporting_against_api import inventories, provider, read

DEFAULT_HOST = "test:///default"


def numa_host(agent_settings: Any, tmp_path: Path, numa: bool) -> AgentSettings:
    settings: AgentSettings = agent_settings(
        tmp_path / "numa-host.xml", libvirt_uri=DEFAULT_HOST, numa_providers=numa
    )
    return settings


async def reported_host(
    agent_settings: Any, tmp_path: Path, numa: bool
) -> tuple[AgentSettings, str]:
    """A host reported once, and its root provider uuid."""
    settings = numa_host(agent_settings, tmp_path, numa)
    first = await one_pass(settings)
    assert first.provider_uuid is not None
    return settings, first.provider_uuid


def tree(placement: httpx.Client, root_uuid: str | None) -> dict[str, dict[str, Any]]:
    """Name -> provider, for every provider in the host's tree."""
    listed = read(placement, f"/resource_providers?in_tree={root_uuid}")["resource_providers"]
    return {p["name"]: p for p in listed}


def usages(placement: httpx.Client, provider_uuid: str) -> dict[str, int]:
    found: dict[str, int] = read(placement, f"/resource_providers/{provider_uuid}/usages")["usages"]
    return found


def consumer(placement: httpx.Client, consumer_uuid: str) -> dict[str, dict[str, int]]:
    body = read(placement, f"/allocations/{consumer_uuid}")
    return {rp: held["resources"] for rp, held in body["allocations"].items()}


def vcpu_candidates(placement: httpx.Client, root_uuid: str | None) -> int:
    query = f"/allocation_candidates?resources=VCPU:1&in_tree={root_uuid}"
    return len(read(placement, query)["allocation_requests"])


def vcpu_total(placement: httpx.Client, root_uuid: str | None) -> int:
    return sum(
        inventories(placement, p["uuid"]).get("VCPU", {}).get("total", 0)
        for p in tree(placement, root_uuid).values()
    )


class Requests:
    """Counts the reshapes a pass sends."""

    def __init__(self) -> None:
        self.reshapes = 0

    async def __call__(self, request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path == "/reshaper":
            self.reshapes += 1


async def pass_counting(settings: AgentSettings, requests: Requests) -> PassResult:
    return await one_pass(settings, event_hooks={"request": [requests]})


def cell(found: dict[str, dict[str, Any]], settings: AgentSettings, cell_id: int) -> str:
    uuid_: str = found[f"{settings.provider_name}_NUMA{cell_id}"]["uuid"]
    return uuid_


async def test_numa_turned_off_moves_cell_allocations_to_the_root_in_one_reshape(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    small = str(uuid.uuid4())
    cells = tree(placement, root)
    other = str(uuid.uuid4())
    allocate(placement, small, cell(cells, settings, 0), {"VCPU": 2, "MEMORY_MB": 512})
    allocate(placement, other, cell(cells, settings, 1), {"VCPU": 4, "MEMORY_MB": 1024})
    assert vcpu_candidates(placement, root) == 2

    requests = Requests()
    result = await pass_counting(settings.model_copy(update={"numa_providers": False}), requests)

    assert result.error is None
    assert not result.tree.held
    assert requests.reshapes == 1
    children = [p["uuid"] for p in cells.values() if p["uuid"] != root]
    assert sorted(result.tree.deleted) == sorted(children)
    assert list(tree(placement, root)) == [settings.provider_name]
    assert inventories(placement, root)["VCPU"]["total"] == 16
    assert usages(placement, root) | {"DISK_GB": 0} == {"VCPU": 6, "MEMORY_MB": 1536, "DISK_GB": 0}
    assert consumer(placement, small) == {root: {"VCPU": 2, "MEMORY_MB": 512}}
    assert consumer(placement, other) == {root: {"VCPU": 4, "MEMORY_MB": 1024}}
    assert vcpu_candidates(placement, root) == 1


async def test_steady_pass_reads_the_tree_once_and_each_inventory_once_and_writes_no_provider(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    await one_pass(settings, event_hooks={"request": [record]})

    paths = [r.url.path for r in sent]
    assert sum(path == "/resource_providers" for path in paths) == 1
    assert sum(path.endswith("/inventories") for path in paths) == 3
    # The heartbeat is the only write, and it moves no generation.
    writes = [f"{r.method} {r.url.path}" for r in sent if r.method != "GET"]
    assert writes == [f"PUT /resource_providers/{root}/heartbeat"]


async def test_numa_toggled_without_allocations_needs_no_reshape(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    requests = Requests()

    off = await pass_counting(settings.model_copy(update={"numa_providers": False}), requests)
    assert off.outcome is not Outcome.FAILED
    assert list(tree(placement, root)) == [settings.provider_name]
    on = await pass_counting(settings, requests)

    assert on.outcome is not Outcome.FAILED
    assert requests.reshapes == 0
    assert len(tree(placement, root)) == 3
    assert vcpu_total(placement, root) == 16


async def test_root_and_cells_both_carrying_vcpu_are_repaired_into_one_count(
    tmp_path: Path, placement, agent_settings
):
    """What an older agent left behind (16 + 8 + 8 VCPU): the cells go, their users move."""
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    small = str(uuid.uuid4())
    cells = tree(placement, root)
    allocate(placement, small, cell(cells, settings, 1), {"VCPU": 3, "MEMORY_MB": 256})
    flat = settings.model_copy(update={"numa_providers": False})
    root_inventory = inventories(placement, root)
    generation = provider(placement, root)["generation"]
    doubled = {"VCPU": {"total": 16, "max_unit": 16}, "MEMORY_MB": {"total": 3072}}
    body = {"resource_provider_generation": generation, "inventories": root_inventory | doubled}
    put = placement.put(f"/resource_providers/{root}/inventories", json=body)
    assert put.status_code == 200, put.text
    assert vcpu_total(placement, root) == 32

    result = await one_pass(flat)

    assert result.error is None
    assert vcpu_total(placement, root) == 16
    assert consumer(placement, small) == {root: {"VCPU": 3, "MEMORY_MB": 256}}


async def test_numa_turned_on_moves_root_allocations_whole_onto_the_cells(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=False)
    small = str(uuid.uuid4())
    other = str(uuid.uuid4())
    allocate(placement, small, root, {"VCPU": 2, "MEMORY_MB": 512})
    allocate(placement, other, root, {"VCPU": 4, "MEMORY_MB": 1024})

    requests = Requests()
    result = await pass_counting(settings.model_copy(update={"numa_providers": True}), requests)

    assert result.error is None
    assert not result.tree.held
    assert requests.reshapes == 1
    found = tree(placement, root)
    cell_zero = cell(found, settings, 0)
    # Largest first, each to the first cell it fits: cell 0 has 1536 MiB after its reservation.
    assert consumer(placement, other) == {cell_zero: {"VCPU": 4, "MEMORY_MB": 1024}}
    assert consumer(placement, small) == {cell_zero: {"VCPU": 2, "MEMORY_MB": 512}}
    assert "VCPU" not in inventories(placement, root)
    assert vcpu_total(placement, root) == 16
    assert usages(placement, cell_zero) == {"VCPU": 6, "MEMORY_MB": 1536}
    assert vcpu_candidates(placement, root) == 2


async def test_consumer_too_big_for_any_cell_keeps_the_flat_layout_until_it_is_gone(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=False)
    big = str(uuid.uuid4())
    allocate(placement, big, root, {"VCPU": 10, "MEMORY_MB": 256})
    numa = settings.model_copy(update={"numa_providers": True})

    held = await one_pass(numa)

    assert held.outcome is Outcome.IN_USE
    assert set(held.tree.held) == {"VCPU", "MEMORY_MB"}
    assert big in held.tree.held["VCPU"]
    assert vcpu_total(placement, root) == 16
    assert consumer(placement, big) == {root: {"VCPU": 10, "MEMORY_MB": 256}}

    assert placement.delete(f"/allocations/{big}").status_code == 204
    moved = await one_pass(numa)

    assert not moved.tree.held
    assert "VCPU" not in inventories(placement, root)
    assert vcpu_total(placement, root) == 16


def without_cell_one(settings: AgentSettings) -> HostFacts:
    """The default test host after losing cell 1 (the test driver cannot unplug one)."""
    facts = discover(settings)
    return replace(facts, numa_cells=tuple(c for c in facts.numa_cells if c.cell_id != 1))


async def test_cell_gone_moves_its_allocations_to_the_cell_left_and_is_deleted(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    small = str(uuid.uuid4())
    cells = tree(placement, root)
    gone, left = cell(cells, settings, 1), cell(cells, settings, 0)
    allocate(placement, small, gone, {"VCPU": 2, "MEMORY_MB": 512})

    result = await one_pass(settings, discover_host=without_cell_one)

    assert result.error is None
    assert result.tree.deleted == [gone]
    assert placement.get(f"/resource_providers/{gone}").status_code == 404
    assert consumer(placement, small) == {left: {"VCPU": 2, "MEMORY_MB": 512}}


async def test_provider_of_someone_else_in_the_tree_is_left_alone_and_reported(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    body = {"name": f"gpu-{uuid.uuid4()}", "parent_provider_uuid": root}
    theirs = placement.post("/resource_providers", json=body).json()["uuid"]

    result = await one_pass(settings.model_copy(update={"numa_providers": False}))

    assert result.tree.foreign == [theirs]
    assert theirs not in result.tree.deleted
    assert set(tree(placement, root)) == {settings.provider_name, body["name"]}


async def test_renamed_host_keeps_its_providers_under_the_new_name(
    tmp_path: Path, placement, agent_settings
):
    settings, root = await reported_host(agent_settings, tmp_path, numa=True)
    before = {p["uuid"] for p in tree(placement, root).values()}
    renamed = settings.model_copy(update={"provider_name": f"renamed-{uuid.uuid4().hex[:8]}"})

    result = await one_pass(renamed)

    assert result.provider_uuid == root
    found = tree(placement, root)
    assert {p["uuid"] for p in found.values()} == before
    assert sorted(found) == [
        renamed.provider_name,
        f"{renamed.provider_name}_NUMA0",
        f"{renamed.provider_name}_NUMA1",
    ]
    old = placement.get("/resource_providers", params={"name": settings.provider_name}).json()
    assert old["resource_providers"] == []
