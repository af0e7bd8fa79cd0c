"""Reconciling domains with allocations, and the periodic loop's resilience."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from agent.daemon import next_delay, run_until_stopped
from agent.placement import AgentPlacement
from agent.reconcile import ALLOCATION_WITHOUT_DOMAIN, DOMAIN_WITHOUT_ALLOCATION
from agent.reporting_pass import Outcome, ReportingPass
from agent.state import StateStore
from placement_client import PlacementClient
from tests.agent.conftest import one_pass
from tests.agent.nodes import NodeDomain, write_node
from tests.agent.test_conflicts_and_ownership import allocate

WEB = NodeDomain("0f0e0d0c-0000-4000-8000-00000000a001", "web", vcpus=2, memory_mib=512)
DB = NodeDomain("0f0e0d0c-0000-4000-8000-00000000a002", "db", vcpus=1, memory_mib=256)


def drift_metric(provider_name: str, kind: str) -> float | None:
    labels = {"provider": provider_name, "kind": kind}
    return REGISTRY.get_sample_value("placement_agent_drift", labels)


async def test_domains_added_and_removed_between_passes_are_reported_as_drift(
    tmp_path: Path, placement, agent_settings
):
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096, domains=(WEB,))
    settings = agent_settings(node)

    first = await one_pass(settings)

    assert first.outcome is Outcome.DRIFT
    assert first.drift is not None
    assert [d.uuid for d in first.drift.domains_without_allocation] == [WEB.uuid]
    assert drift_metric(settings.provider_name, DOMAIN_WITHOUT_ALLOCATION) == 1

    allocate(placement, WEB.uuid, first.provider_uuid, {"VCPU": 2, "MEMORY_MB": 512})
    in_sync = await one_pass(settings)

    assert in_sync.outcome is Outcome.SYNCED
    assert drift_metric(settings.provider_name, DOMAIN_WITHOUT_ALLOCATION) == 0

    write_node(node, cpus=4, memory_mib=4096, domains=(DB,))
    changed = await one_pass(settings)

    assert changed.outcome is Outcome.DRIFT
    assert changed.drift is not None
    assert [d.uuid for d in changed.drift.domains_without_allocation] == [DB.uuid]
    assert list(changed.drift.allocations_without_domain) == [WEB.uuid]
    assert drift_metric(settings.provider_name, ALLOCATION_WITHOUT_DOMAIN) == 1
    # Drift is reported, never repaired.
    held = placement.get(f"/allocations/{WEB.uuid}").json()["allocations"]
    assert held[first.provider_uuid]["resources"] == {"VCPU": 2, "MEMORY_MB": 512}


async def wait_until(condition, seconds: float) -> None:
    """Poll something outside this process (the API, the state file)."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"condition not met within {seconds}s")


async def test_daemon_survives_an_api_restart_and_stops_at_once_when_asked(
    tmp_path: Path, placement_server, placement, agent_settings
):
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096)
    settings = agent_settings(node, interval=0.2, interval_jitter=0.1)
    stop = asyncio.Event()
    client = PlacementClient.with_token(settings.api_url, "admin", timeout=2.0)
    reporting_pass = ReportingPass(settings, AgentPlacement(client))
    daemon = asyncio.create_task(run_until_stopped(reporting_pass, 0.2, 0.1, stop))

    def vcpus() -> int | None:
        state = StateStore(settings.state_dir).load()
        if state is None:
            return None
        response = placement.get(f"/resource_providers/{state.root_provider_uuid}/inventories")
        if response.status_code == 404:  # the state is written before the provider exists
            return None
        total: int | None = response.json()["inventories"].get("VCPU", {}).get("total")
        return total

    try:
        await wait_until(lambda: vcpus() == 4, 10)
        placement_server.stop()
        write_node(node, cpus=6, memory_mib=4096)
        while_down = await one_pass(settings)
        await asyncio.sleep(0.6)
        assert while_down.outcome is Outcome.FAILED
        assert not daemon.done()
        placement_server.start()
        await wait_until(lambda: vcpus() == 6, 15)
    finally:
        if placement_server.process is None:
            placement_server.start()
        stop.set()
        await asyncio.wait_for(daemon, timeout=2)
        await client.aclose()


async def test_stop_during_the_wait_ends_the_loop_without_waiting_the_interval(
    tmp_path: Path, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048))
    stop = asyncio.Event()
    async with PlacementClient.with_token(settings.api_url, "admin", timeout=5.0) as client:
        reporting_pass = ReportingPass(settings, AgentPlacement(client))
        daemon = asyncio.create_task(run_until_stopped(reporting_pass, 3600, 0.1, stop))
        await wait_until(lambda: StateStore(settings.state_dir).load() is not None, 10)
        await asyncio.sleep(0.2)

        stop.set()

        await asyncio.wait_for(daemon, timeout=1)


@pytest.mark.parametrize("failures", [0, 1, 3, 10])
def test_delay_is_the_interval_with_jitter_and_shorter_after_failures(failures: int):
    delays = [next_delay(60.0, 0.1, failures) for _ in range(200)]
    expected = 60.0 if failures in (0, 10) else 2.0 ** (failures - 1)

    assert min(delays) >= expected * 0.9
    assert max(delays) <= expected * 1.1
    assert len(set(delays)) > 1
