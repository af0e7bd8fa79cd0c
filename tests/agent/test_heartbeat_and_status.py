"""The agent's heartbeat and the host's enabled status, against a real API server
and libvirt's test driver."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.host_status import DISABLED_TRAIT
from agent.placement import AgentPlacement
from agent.reporting_pass import Outcome, ReportingPass
from agent.settings import AgentSettings
from agent.state import StateStore
from placement_client import PlacementClient
from tests.agent.conftest import PlacementServer
from tests.agent.nodes import write_node
from tests.agent.test_cli import AGENT
from tests.agent.test_drift_and_daemon import wait_until
from tests.support import databases


def heartbeat_of(placement: httpx.Client, root_uuid: str | None) -> dict[str, Any] | None:
    found = placement.get("/heartbeats", params={"in_tree": root_uuid}).json()["heartbeats"]
    return dict(found[0]) if found else None


def traits(placement: httpx.Client, provider_uuid: str | None) -> set[str]:
    return set(placement.get(f"/resource_providers/{provider_uuid}/traits").json()["traits"])


async def test_each_pass_sends_a_heartbeat_with_what_the_test_driver_measures(
    tmp_path: Path, placement, agent_settings, caplog
):
    # test:///default runs one domain, whose CPU time advances; it has no node
    # memory statistics and its node CPU counters are fixed.
    settings = agent_settings(tmp_path / "default.xml", libvirt_uri="test:///default")
    async with PlacementClient.with_token(settings.api_url, "admin", timeout=10.0) as client:
        reporting = ReportingPass(settings, AgentPlacement(client))
        with caplog.at_level(logging.WARNING, logger="agent.utilisation"):
            first = await reporting.run()
            sent_first = heartbeat_of(placement, first.provider_uuid)
            second = await reporting.run()
            third = await reporting.run()

    assert first.outcome is Outcome.DRIFT  # the domain has no allocation: still a good pass
    assert [first.heartbeat_sent, second.heartbeat_sent, third.heartbeat_sent] == [True] * 3
    assert sent_first is not None
    assert (sent_first["interval"], sent_first["alive"], sent_first["metrics"]) == (60, True, {})
    assert set(second.metrics) == {"instances.cpu.percent"}
    assert 0 < second.metrics["instances.cpu.percent"] <= 100
    shown = heartbeat_of(placement, first.provider_uuid)
    assert shown is not None
    assert shown["metrics"] == third.metrics
    assert shown["metrics_at"] == shown["last_seen"]
    gaps = [r.getMessage() for r in caplog.records if r.name == "agent.utilisation"]
    assert [gap.split(" metrics")[0] for gap in gaps] == ["memory.*", "cpu.*"]


@pytest.fixture
def heartbeats_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[PlacementServer]:
    """An API whose policy refuses every heartbeat (SQLite: the agent side is under test)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:heartbeat:update": "!"\n')
    monkeypatch.setenv("PLACEMENT_POLICY_FILE", str(policy))
    with databases.sqlite_database() as url:
        server = PlacementServer("sqlite", url, tmp_path / "refusing.log")
        server.start()
        yield server
        server.stop()


async def test_a_refused_heartbeat_leaves_the_pass_in_sync(
    tmp_path: Path, heartbeats_refused: PlacementServer, caplog
):
    settings = AgentSettings(
        api_url=heartbeats_refused.url,
        token="admin",
        libvirt_uri=f"test://{write_node(tmp_path / 'host.xml', cpus=2, memory_mib=2048)}",
        state_dir=tmp_path / "state",
        instances_path=tmp_path,
        provider_name=f"refused-{uuid.uuid4().hex[:8]}",
    )
    async with PlacementClient.with_token(settings.api_url, "admin", timeout=10.0) as client:
        with caplog.at_level(logging.WARNING, logger="agent.reporting_pass"):
            result = await ReportingPass(settings, AgentPlacement(client)).run()

    assert result.outcome is Outcome.SYNCED
    assert result.reports[0].inventory_written
    assert not result.heartbeat_sent
    assert "heartbeat not sent" in caplog.text


def start_agent(settings: AgentSettings, *once: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_AGENT_")}
    return subprocess.Popen(
        [str(AGENT), "run", *once, "--api-url", str(settings.api_url), "--token", "admin",
         "--libvirt-uri", settings.libvirt_uri, "--state-dir", str(settings.state_dir),
         "--instances-path", str(settings.instances_path), "--interval", "0.5",
         "--provider-name", str(settings.provider_name)],
        env=environment, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def stop(process: subprocess.Popen[str], signum: signal.Signals) -> int:
    process.send_signal(signum)
    try:
        return process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()


async def test_a_clean_stop_disables_the_host_and_the_next_start_enables_it(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048))
    store = StateStore(settings.state_dir)

    def root() -> str | None:
        state = store.load()
        return state.root_provider_uuid if state else None

    def heartbeats_since(moment: str | None) -> bool:
        uuid_ = root()
        seen = heartbeat_of(placement, uuid_) if uuid_ else None
        return seen is not None and (moment is None or seen["last_seen"] > moment)

    running = start_agent(settings)
    await wait_until(lambda: heartbeats_since(None), 20)
    assert stop(running, signal.SIGTERM) == 0
    host = root()
    assert host is not None
    assert DISABLED_TRAIT in traits(placement, host)
    assert json.loads(store.path.read_text())["disabled_by_agent"] is True

    once = start_agent(settings, "--once")
    assert once.wait(timeout=30) == Outcome.SYNCED
    assert DISABLED_TRAIT in traits(placement, host)  # --once leaves the status alone

    disabled_at = heartbeat_of(placement, host)
    assert disabled_at is not None
    restarted = start_agent(settings)
    await wait_until(lambda: DISABLED_TRAIT not in traits(placement, host), 20)
    await wait_until(lambda: heartbeats_since(disabled_at["last_seen"]), 20)
    assert "COMPUTE_NODE" in traits(placement, host)
    assert stop(restarted, signal.SIGINT) == 0
    assert DISABLED_TRAIT in traits(placement, host)


async def test_a_disable_the_agent_did_not_set_survives_its_restart(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048))
    async with PlacementClient.with_token(settings.api_url, "admin", timeout=10.0) as client:
        daemon = ReportingPass(settings, AgentPlacement(client), manages_host_status=True)
        host = (await daemon.run()).provider_uuid
        shown = placement.get(f"/resource_providers/{host}/traits").json()
        operator = {
            "resource_provider_generation": shown["resource_provider_generation"],
            "traits": [*shown["traits"], DISABLED_TRAIT],
        }
        assert placement.put(f"/resource_providers/{host}/traits", json=operator).is_success

        await daemon.disable_host()
        restarted = ReportingPass(settings, AgentPlacement(client), manages_host_status=True)
        after = await restarted.run()

    assert after.outcome is Outcome.SYNCED
    assert DISABLED_TRAIT in traits(placement, host)
    state = StateStore(settings.state_dir).load()
    assert state is not None
    assert not state.disabled_by_agent
