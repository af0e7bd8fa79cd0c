"""``placement-agent heal`` against a real API on libvirt's test driver: allocations
created for running domains without one, orphans kept for their grace period and
then removed from this host only, and a destructive command that needs its URL."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.heal import HealOptions, HealReport, OrphanLedger, Space, find_root, heal, place
from agent.inventory import InventoryRecord
from agent.placement import AgentPlacement
from agent.reporting_pass import Outcome
from agent.settings import AgentSettings
from placement_client import PlacementClient
from tests.agent.conftest import one_pass
from tests.agent.nodes import NodeDomain, node_uri, write_node
from tests.agent.test_cli import agent


def _web() -> NodeDomain:
    """A running domain, its uuid new to the server every test shares."""
    return NodeDomain(str(uuid.uuid4()), "web", vcpus=2, memory_mib=512)


def _options(**changes: Any) -> HealOptions:
    values: dict[str, Any] = {
        "project_id": "ops",
        "user_id": "heal",
        "delete_orphans": False,
        "grace": 3600.0,
        "dry_run": False,
    }
    return HealOptions(**(values | changes))


async def _heal(settings: AgentSettings, options: HealOptions) -> HealReport:
    from agent.reporting_pass import discover

    facts = discover(settings)
    async with PlacementClient.with_token(settings.api_url, "admin", timeout=10.0) as client:
        placement = AgentPlacement(client)
        root = await find_root(placement, None, settings.provider_name or facts.hostname)
        return await heal(placement, root, facts.domains, OrphanLedger(settings.state_dir), options)


def _consumer(placement: httpx.Client, consumer: str) -> dict[str, Any]:
    body: dict[str, Any] = placement.get(f"/allocations/{consumer}").json()
    return body


def _held(placement: httpx.Client, consumer: str) -> dict[str, Any]:
    held: dict[str, Any] = _consumer(placement, consumer)["allocations"]
    return held


def _provider_elsewhere(placement: httpx.Client) -> str:
    created = placement.post("/resource_providers", json={"name": f"other-{uuid.uuid4()}"})
    other: str = created.json()["uuid"]
    inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}
    placement.put(f"/resource_providers/{other}/inventories", json=inventory)
    return other


def _claim(placement: httpx.Client, consumer: str, body: dict[str, Any]) -> None:
    assert placement.put(f"/allocations/{consumer}", json=body).status_code == 204


def _space(left: int, max_unit: int = 64, step_size: int = 1) -> Space:
    return Space(left, InventoryRecord(total=64, max_unit=max_unit, step_size=step_size))


def test_each_class_goes_to_the_first_provider_that_takes_it_or_nowhere() -> None:
    room = {
        "root": {"VCPU": _space(1), "MEMORY_MB": _space(4096, max_unit=8192, step_size=256)},
        "cell": {"VCPU": _space(8, max_unit=4)},
        "cell2": {"VCPU": _space(8)},
    }
    assert place({"VCPU": 2, "MEMORY_MB": 512}, room) == {
        "cell": {"VCPU": 2},
        "root": {"MEMORY_MB": 512},
    }
    assert place({"VCPU": 6}, room) == {"cell2": {"VCPU": 6}}  # over the cell's max_unit
    assert place({"VCPU": 16}, room) == {}
    assert place({"VCPU": 1, "MEMORY_MB": 100}, room) == {}  # not a step of 256


async def test_heal_creates_the_missing_allocation_of_a_running_domain_only(
    tmp_path: Path, placement: httpx.Client, agent_settings: Any
) -> None:
    web = _web()
    idle = NodeDomain(str(uuid.uuid4()), "idle", vcpus=1, running=False)
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096, domains=(web, idle))
    settings = agent_settings(node)
    first = await one_pass(settings)
    assert first.outcome is Outcome.DRIFT

    dry = await _heal(settings, _options(dry_run=True))
    assert [h.consumer for h in dry.created] == [web.uuid]
    assert _held(placement, web.uuid) == {}

    report = await _heal(settings, _options())
    assert [h.consumer for h in report.created] == [web.uuid]
    assert not report.drift_left
    held = _held(placement, web.uuid)
    assert held[str(first.provider_uuid)]["resources"] == {"VCPU": 2, "MEMORY_MB": 512}
    owner = _consumer(placement, web.uuid)
    assert (owner["project_id"], owner["user_id"]) == ("ops", "heal")
    assert _held(placement, idle.uuid) == {}
    assert (await one_pass(settings)).outcome is Outcome.SYNCED


async def test_a_domain_no_provider_takes_is_listed_and_the_others_are_healed(
    tmp_path: Path, placement: httpx.Client, agent_settings: Any
) -> None:
    # 8 vCPUs fit the room at ratio 4 (16) but not VCPU's max_unit (the 4 CPUs),
    # which the server would refuse.
    big = NodeDomain(str(uuid.uuid4()), "big", vcpus=8, memory_mib=256)
    web = _web()
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096, domains=(big, web))
    settings = agent_settings(node, cpu_allocation_ratio=4.0)
    await one_pass(settings)

    report = await _heal(settings, _options())
    assert [h.consumer for h in report.created] == [web.uuid]
    assert "fit on no provider" in report.not_healed["big"]
    assert _held(placement, big.uuid) == {}


async def test_an_orphan_is_kept_for_its_grace_then_removed_from_this_host_only(
    tmp_path: Path, placement: httpx.Client, agent_settings: Any
) -> None:
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096)
    settings = agent_settings(node)
    here = (await one_pass(settings)).provider_uuid
    assert here is not None
    other = _provider_elsewhere(placement)
    gone = str(uuid.uuid4())
    body = {
        "allocations": {here: {"resources": {"VCPU": 1}}, other: {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "MIGRATION",
    }
    _claim(placement, gone, body)

    seen = await _heal(settings, _options(delete_orphans=True))
    [orphan] = seen.orphans
    assert (orphan.consumer, orphan.deleted) == (gone, False)
    assert seen.drift_left
    assert set(_held(placement, gone)) == {here, other}

    removed = await _heal(settings, _options(delete_orphans=True, grace=0.0))
    assert [o.deleted for o in removed.orphans] == [True]
    assert set(_held(placement, gone)) == {other}
    assert _consumer(placement, gone)["consumer_type"] == "MIGRATION"
    assert (await _heal(settings, _options(delete_orphans=True, grace=0.0))).orphans == []


@pytest.mark.parametrize("placement_server", ["sqlite"], indirect=True)  # the CLI, not the DB
def test_heal_cli_needs_an_explicit_url_then_reports_as_json(
    tmp_path: Path, placement_server: Any, placement: httpx.Client
) -> None:
    web = _web()
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096, domains=(web,))
    common = [
        "--libvirt-uri", node_uri(node), "--state-dir", str(tmp_path / "state"),
        "--provider-name", f"heal-{uuid.uuid4().hex[:8]}",
    ]  # fmt: skip
    implicit = agent("heal", "--token", "admin", *common)
    assert implicit.returncode == Outcome.FAILED
    assert "--api-url" in implicit.stderr
    assert "127.0.0.1:8778" in implicit.stderr

    url = ["--api-url", placement_server.url, "--token", "admin"]
    assert agent("--once", *url, *common, "--instances-path", str(tmp_path)).returncode == 3
    healed = agent("heal", *url, *common, "--project-id", "p", "--user-id", "u", "--json")
    assert healed.returncode == Outcome.SYNCED, healed.stdout + healed.stderr
    document = json.loads(healed.stdout)
    assert document["totals"]["created"] == 1
    assert document["hosts"][0]["created"][0]["consumer"] == web.uuid


def test_decommission_without_a_url_refuses_rather_than_use_the_default() -> None:
    refused = agent("decommission", "some-host", "--token", "admin")
    assert refused.returncode == Outcome.FAILED
    assert "--api-url" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("placement_server", ["sqlite"], indirect=True)  # the CLI, not the DB
async def test_one_heal_reports_on_every_host_it_is_given_and_goes_on_past_a_failure(
    tmp_path: Path, placement_server: Any, placement: httpx.Client, agent_settings: Any
) -> None:
    hosts = {}
    for name in ("fleet-a", "fleet-b"):
        node = write_node(tmp_path / f"{name}.xml", cpus=4, memory_mib=4096, domains=(_web(),))
        settings = agent_settings(node)
        await one_pass(settings)
        hosts[str(settings.provider_name)] = node_uri(node)
    given = [f"--host={name}={uri}" for name, uri in hosts.items()]
    ghost = f"--host=ghost-{uuid.uuid4().hex[:6]}={node_uri(tmp_path / 'fleet-a.xml')}"
    fleet = agent(
        "heal", "--api-url", placement_server.url, "--token", "admin", *given, ghost,
        "--state-dir", str(tmp_path / "central"), "--project-id", "p", "--user-id", "u", "--json",
    )  # fmt: skip
    assert fleet.returncode == Outcome.FAILED, fleet.stderr
    document = json.loads(fleet.stdout)
    assert [h["host"] for h in document["hosts"][:2]] == list(hosts)
    assert document["totals"]["created"] == 2
    assert document["totals"]["hosts_failed"] == 1
    assert "no root provider" in document["hosts"][2]["error"]
