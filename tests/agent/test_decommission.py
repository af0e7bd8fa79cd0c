"""``placement-agent decommission`` against a real API: refusal with the consumers listed,
dry runs that change nothing, children deleted before parents, a tree that changes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from agent.decommission import Status, decommission
from agent.placement import AgentPlacement
from placement_client import PlacementClient
from tests.agent.conftest import one_pass
from tests.agent.test_cli import agent
from tests.agent.test_conflicts_and_ownership import add_trait_as_another_writer, allocate
from tests.agent.test_tree_changes import numa_host, tree


async def numa_tree(placement, agent_settings: Any, tmp_path: Path) -> dict[str, dict[str, Any]]:
    settings = numa_host(agent_settings, tmp_path, numa=True)
    first = await one_pass(settings)
    found = tree(placement, first.provider_uuid)
    assert len(found) == 3
    return found


def decommission_cli(server_url: str, *arguments: str) -> Any:
    return agent("decommission", "--api-url", server_url, "--token", "admin", *arguments)


def still_there(placement: httpx.Client, providers: dict[str, dict[str, Any]]) -> set[str]:
    return {
        name
        for name, found in providers.items()
        if placement.get(f"/resource_providers/{found['uuid']}").status_code == 200
    }


async def test_host_with_allocations_is_refused_with_its_consumers_then_removed_once_freed(
    tmp_path: Path, placement, placement_server, agent_settings
):
    providers = await numa_tree(placement, agent_settings, tmp_path)
    root_name = next(name for name, p in providers.items() if p["parent_provider_uuid"] is None)
    cell_zero = providers[f"{root_name}_NUMA0"]["uuid"]
    guest, other = str(uuid.uuid4()), str(uuid.uuid4())
    allocate(placement, guest, cell_zero, {"VCPU": 2, "MEMORY_MB": 512})
    allocate(placement, other, providers[f"{root_name}_NUMA1"]["uuid"], {"VCPU": 1})

    refused = decommission_cli(placement_server.url, root_name)

    assert refused.returncode == Status.IN_USE, refused.stderr
    assert guest in refused.stdout
    assert other in refused.stdout
    assert "MEMORY_MB=512, VCPU=2" in refused.stdout
    assert still_there(placement, providers) == set(providers)

    as_json = decommission_cli(placement_server.url, root_name, "--json")
    holdings = json.loads(as_json.stdout)["holdings"]
    assert {
        "consumer": guest,
        "provider": cell_zero,
        "resources": {"VCPU": 2, "MEMORY_MB": 512},
    } in holdings

    for consumer in (guest, other):
        assert placement.delete(f"/allocations/{consumer}").status_code == 204
    root_uuid = providers[root_name]["uuid"]
    dry = decommission_cli(placement_server.url, root_uuid, "--dry-run")

    assert dry.returncode == Status.DONE, dry.stdout
    assert "would delete 3 provider(s)" in dry.stdout
    assert still_there(placement, providers) == set(providers)

    done = decommission_cli(placement_server.url, root_uuid)

    assert done.returncode == Status.DONE, done.stdout
    assert still_there(placement, providers) == set()


async def test_dry_run_of_a_host_in_use_lists_consumers_and_deletes_nothing(
    tmp_path: Path, placement, placement_server, agent_settings
):
    providers = await numa_tree(placement, agent_settings, tmp_path)
    root_name = next(name for name, p in providers.items() if p["parent_provider_uuid"] is None)
    guest = str(uuid.uuid4())
    allocate(placement, guest, providers[root_name]["uuid"], {"DISK_GB": 1})

    dry = decommission_cli(placement_server.url, root_name, "--dry-run")

    assert dry.returncode == Status.IN_USE
    assert guest in dry.stdout
    assert still_there(placement, providers) == set(providers)


def test_unknown_host_and_child_provider_are_refused(placement_server, placement):
    unknown = decommission_cli(placement_server.url, f"no-such-host-{uuid.uuid4().hex[:6]}")
    assert unknown.returncode == Status.FAILED
    assert "no resource provider" in unknown.stdout

    parent = placement.post("/resource_providers", json={"name": f"p-{uuid.uuid4()}"}).json()
    body = {"name": f"c-{uuid.uuid4()}", "parent_provider_uuid": parent["uuid"]}
    child = placement.post("/resource_providers", json=body).json()
    named_child = decommission_cli(placement_server.url, child["uuid"])
    assert named_child.returncode == Status.FAILED
    assert "root provider" in named_child.stdout


async def test_tree_changed_during_removal_stops_with_one_message_after_the_children(
    tmp_path: Path, placement, placement_server, agent_settings
):
    providers = await numa_tree(placement, agent_settings, tmp_path)
    root = next(p for p in providers.values() if p["parent_provider_uuid"] is None)

    async def another_writer(request: httpx.Request) -> None:
        if request.method == "DELETE" and not getattr(another_writer, "done", False):
            another_writer.done = True  # type: ignore[attr-defined]
            add_trait_as_another_writer(placement, root["uuid"], "CUSTOM_STILL_IN_USE")

    hooks = {"request": [another_writer]}
    async with PlacementClient.with_token(placement_server.url, "admin", event_hooks=hooks) as c:
        result = await decommission(AgentPlacement(c), root["uuid"], dry_run=False)

    assert result.status is Status.CHANGED
    assert "generation moved" in result.message
    assert len(result.deleted) == 2
    assert still_there(placement, providers) == {root["name"]}
