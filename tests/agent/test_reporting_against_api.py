"""The agent against libvirt's test driver and a real Placement API server."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx

from agent.discovery import RawHost, build_host_facts
from agent.placement import AgentPlacement
from agent.reporter import Reporter, conflict_retry
from agent.reporting_pass import Outcome, plan_for
from agent.state import AgentState, StateStore
from placement_client import PlacementClient
from tests.agent.conftest import one_pass
from tests.agent.nodes import DATA, write_node


def read(placement: httpx.Client, path: str) -> dict[str, Any]:
    response = placement.get(path)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def provider(placement: httpx.Client, provider_uuid: str | None) -> dict[str, Any]:
    assert provider_uuid is not None
    return read(placement, f"/resource_providers/{provider_uuid}")


def inventories(placement: httpx.Client, provider_uuid: str | None) -> dict[str, Any]:
    assert provider_uuid is not None
    found: dict[str, Any] = read(placement, f"/resource_providers/{provider_uuid}/inventories")[
        "inventories"
    ]
    return found


def traits(placement: httpx.Client, provider_uuid: str | None) -> set[str]:
    assert provider_uuid is not None
    return set(read(placement, f"/resource_providers/{provider_uuid}/traits")["traits"])


async def test_first_pass_creates_the_provider_with_host_inventory_and_traits(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=6, memory_mib=12288))

    result = await one_pass(settings)

    assert result.outcome is Outcome.SYNCED, result.error
    state = StateStore(settings.state_dir).load()
    assert state is not None
    assert result.provider_uuid == state.root_provider_uuid
    assert provider(placement, state.root_provider_uuid)["name"] == settings.provider_name
    reported = inventories(placement, state.root_provider_uuid)
    assert reported["VCPU"]["total"] == 6
    assert reported["VCPU"]["allocation_ratio"] == 4.0
    assert reported["MEMORY_MB"]["total"] == 12288
    assert reported["MEMORY_MB"]["reserved"] == 512
    assert reported["DISK_GB"]["total"] > 0
    # libvirt's test driver describes an i686 host without a CPU model.
    assert traits(placement, state.root_provider_uuid) == {"HW_ARCH_I686", "COMPUTE_NODE"}


async def test_two_hosts_of_different_sizes_report_their_own_inventory(
    tmp_path: Path, placement, agent_settings
):
    small = agent_settings(write_node(tmp_path / "small.xml", cpus=4, memory_mib=8192))
    large = agent_settings(write_node(tmp_path / "large.xml", cpus=64, memory_mib=262144))

    small_result, large_result = await asyncio.gather(one_pass(small), one_pass(large))

    assert small_result.provider_uuid != large_result.provider_uuid
    small_inventory = inventories(placement, small_result.provider_uuid)
    large_inventory = inventories(placement, large_result.provider_uuid)
    assert (small_inventory["VCPU"]["total"], small_inventory["MEMORY_MB"]["total"]) == (4, 8192)
    assert (large_inventory["VCPU"]["total"], large_inventory["MEMORY_MB"]["total"]) == (
        64,
        262144,
    )


async def test_unchanged_host_causes_no_provider_write_on_the_next_pass(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096))
    first = await one_pass(settings)
    generation = provider(placement, first.provider_uuid)["generation"]
    writes: list[str] = []

    async def record(request: httpx.Request) -> None:
        if request.method != "GET":
            writes.append(f"{request.method} {request.url.path}")

    second = await one_pass(settings, event_hooks={"request": [record]})

    assert second.outcome is Outcome.SYNCED
    # The heartbeat is the only write, and it moves no generation.
    assert writes == [f"PUT /resource_providers/{first.provider_uuid}/heartbeat"]
    assert not second.reports[0].inventory_written
    assert provider(placement, first.provider_uuid)["generation"] == generation


async def test_inventory_follows_the_node_file_between_passes(
    tmp_path: Path, placement, agent_settings
):
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096)
    settings = agent_settings(node)
    first = await one_pass(settings)

    write_node(node, cpus=8, memory_mib=16384)
    second = await one_pass(settings)

    assert second.provider_uuid == first.provider_uuid
    assert second.reports[0].inventory_written
    reported = inventories(placement, first.provider_uuid)
    assert (reported["VCPU"]["total"], reported["MEMORY_MB"]["total"]) == (8, 16384)


async def test_provider_uuid_is_stable_across_agent_restarts(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048))
    first = await one_pass(settings)

    again = await one_pass(settings)

    assert again.provider_uuid == first.provider_uuid
    named = placement.get("/resource_providers", params={"name": settings.provider_name})
    assert [p["uuid"] for p in named.json()["resource_providers"]] == [first.provider_uuid]


async def test_lost_state_directory_adopts_the_provider_reported_under_the_name(
    tmp_path: Path, placement, agent_settings
):
    node = write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048)
    settings = agent_settings(node)
    first = await one_pass(settings)

    fresh = settings.model_copy(update={"state_dir": tmp_path / "new-state"})
    adopted = await one_pass(fresh)

    assert adopted.outcome is Outcome.SYNCED
    assert adopted.provider_uuid == first.provider_uuid


async def test_provider_created_by_someone_else_meanwhile_is_used(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048))
    provider_uuid = str(uuid.uuid4())
    StateStore(settings.state_dir).save(AgentState(root_provider_uuid=provider_uuid))

    async def create_first(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path == "/resource_providers":
            body = {"uuid": provider_uuid, "name": settings.provider_name}
            assert placement.post("/resource_providers", json=body).status_code == 200

    result = await one_pass(settings, event_hooks={"request": [create_first]})

    assert result.outcome is Outcome.SYNCED, result.error
    assert not result.reports[0].created
    assert inventories(placement, provider_uuid)["VCPU"]["total"] == 2


async def test_name_held_by_another_provider_fails_the_pass_clearly(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048))
    other = placement.post("/resource_providers", json={"name": settings.provider_name}).json()
    StateStore(settings.state_dir).save(AgentState(root_provider_uuid=str(uuid.uuid4())))

    result = await one_pass(settings)

    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert other["uuid"] in result.error
    assert settings.provider_name in result.error


async def test_numa_cells_are_reported_as_child_providers_of_the_root(
    placement, agent_settings, tmp_path: Path
):
    settings = agent_settings(tmp_path / "unused.xml", numa_providers=True)
    capabilities = (DATA / "capabilities-two-cells.xml").read_text()
    facts = build_host_facts(
        RawHost(
            hostname="numa-host",
            node_info=["x86_64", 24576, 4, 2400, 2, 1, 2, 1],
            memory_stats=None,
            cpu_stats=None,
            read_at=0.0,
            capabilities_xml=capabilities,
            expanded_cpu_xml=None,
            domains=[],
            instances_disk_bytes=0,
        )
    )
    root_uuid = str(uuid.uuid4())
    host_plan = plan_for(settings, facts, root_uuid)

    async with PlacementClient.with_token(settings.api_url, "admin", timeout=10.0) as client:
        reporter = Reporter(AgentPlacement(client), conflict_retry(5))
        for planned in host_plan.providers:
            await reporter.sync(planned, frozenset())

    tree = placement.get("/resource_providers", params={"in_tree": root_uuid}).json()
    children = [p for p in tree["resource_providers"] if p["uuid"] != root_uuid]
    assert sorted(p["name"] for p in children) == [
        f"{settings.provider_name}_NUMA0",
        f"{settings.provider_name}_NUMA1",
    ]
    assert {p["parent_provider_uuid"] for p in children} == {root_uuid}
    cell_zero = next(p["uuid"] for p in children if p["name"].endswith("_NUMA0"))
    assert inventories(placement, cell_zero)["MEMORY_MB"]["total"] == 16384
    assert traits(placement, cell_zero) == {"HW_NUMA_ROOT"}
    # Disk stays on the root; with no instances filesystem there is none to report.
    assert inventories(placement, root_uuid) == {}
