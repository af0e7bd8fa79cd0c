"""``placement-agent`` as scripts call it: options, environment, exit status, signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.reporting_pass import Outcome
from agent.state import StateStore
from tests.agent.nodes import DATA, NodeDomain, node_uri, write_node
from tests.support.server import free_port

AGENT = Path(sys.executable).parent / "placement-agent"


def agent(*arguments: str, env: dict[str, str] | None = None, timeout: float = 30):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_AGENT_")}
    return subprocess.run(
        [str(AGENT), *arguments],
        env=environment | (env or {}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_show_json_prints_name_inventory_and_traits_without_an_api(tmp_path: Path):
    completed = agent(
        "show", "--json", "--libvirt-uri", node_uri(DATA / "small-host.xml"),
        "--instances-path", str(tmp_path), "--state-dir", str(tmp_path / "state"),
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["name"] == socket.gethostname()
    assert document["uuid"] is None
    assert document["inventories"]["VCPU"]["total"] == 4
    assert document["inventories"]["MEMORY_MB"]["total"] == 8192
    assert set(document["traits"]) == {"HW_ARCH_I686", "COMPUTE_NODE"}
    assert {d["name"] for d in document["domains"]} == {"web-1", "stopped-1"}
    assert not (tmp_path / "state").exists()


def test_show_prints_a_table_for_people(tmp_path: Path):
    completed = agent(
        "show", "--libvirt-uri", node_uri(DATA / "large-host.xml"),
        "--instances-path", str(tmp_path), "--provider-name", "big-one",
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    assert "big-one" in completed.stdout
    assert "262144" in completed.stdout


def test_once_reads_its_settings_from_the_environment(tmp_path: Path, placement_server, placement):
    name = f"env-host-{uuid.uuid4().hex[:8]}"
    environment = {
        "PLACEMENT_AGENT_API_URL": placement_server.url,
        "PLACEMENT_AGENT_TOKEN": "admin",
        "PLACEMENT_AGENT_LIBVIRT_URI": node_uri(
            write_node(tmp_path / "host.xml", cpus=3, memory_mib=3072)
        ),
        "PLACEMENT_AGENT_STATE_DIR": str(tmp_path / "state"),
        "PLACEMENT_AGENT_INSTANCES_PATH": str(tmp_path),
        "PLACEMENT_AGENT_PROVIDER_NAME": name,
    }

    completed = agent("--once", env=environment)

    assert completed.returncode == Outcome.SYNCED, completed.stderr
    state = StateStore(tmp_path / "state").load()
    assert state is not None
    inventory = placement.get(f"/resource_providers/{state.root_provider_uuid}/inventories")
    assert inventory.json()["inventories"]["VCPU"]["total"] == 3


def test_once_exit_status_tells_a_script_about_drift(tmp_path: Path, placement_server):
    domain = NodeDomain(str(uuid.uuid4()), "unaccounted")
    node = write_node(tmp_path / "host.xml", cpus=2, memory_mib=2048, domains=(domain,))

    completed = agent(
        "run", "--once", "--api-url", placement_server.url, "--token", "admin",
        "--libvirt-uri", node_uri(node), "--state-dir", str(tmp_path / "state"),
        "--instances-path", str(tmp_path), "--provider-name", f"drifty-{uuid.uuid4().hex[:8]}",
    )  # fmt: skip

    assert completed.returncode == Outcome.DRIFT, completed.stderr
    assert domain.uuid in completed.stderr
    assert "without an allocation" in completed.stderr


def test_once_fails_with_status_one_when_the_api_is_unreachable(tmp_path: Path):
    url = f"http://127.0.0.1:{free_port()}"
    completed = agent(
        "--once", "--api-url", url, "--token", "admin",
        "--libvirt-uri", node_uri(DATA / "small-host.xml"), "--state-dir", str(tmp_path),
        "--instances-path", str(tmp_path),
    )  # fmt: skip

    assert completed.returncode == Outcome.FAILED
    # One line that names the URL and what to check, no traceback.
    assert f"cannot reach Placement at {url}" in completed.stderr
    assert "PLACEMENT_AGENT_API_URL" in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1, completed.stderr


def test_an_auth_config_without_credentials_is_reported_and_fails(tmp_path: Path):
    config = tmp_path / "agent.conf"
    config.write_text("[placement]\nregion_name = RegionOne\n")
    completed = agent(
        "--once", "--auth-config", str(config), "--state-dir", str(tmp_path),
        "--libvirt-uri", node_uri(DATA / "small-host.xml"), "--instances-path", str(tmp_path),
    )  # fmt: skip

    assert completed.returncode == Outcome.FAILED
    message = " ".join(completed.stderr.split())
    assert "cannot set up Placement credentials" in message
    assert "[placement] of" in message
    assert "names no auth_type" in message


def test_invalid_setting_is_reported_and_fails(tmp_path: Path):
    completed = agent("--once", "--interval", "-5", "--state-dir", str(tmp_path))

    assert completed.returncode == Outcome.FAILED
    assert "interval" in completed.stderr


def test_run_serves_metrics_and_stops_cleanly_on_sigterm_while_waiting(
    tmp_path: Path, placement_server
):
    name = f"daemon-{uuid.uuid4().hex[:8]}"
    metrics_port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_AGENT_")} | {
        "PLACEMENT_AGENT_METRICS_PORT": str(metrics_port)
    }
    process = subprocess.Popen(
        [str(AGENT), "run", "--api-url", placement_server.url, "--token", "admin",
         "--libvirt-uri", node_uri(DATA / "large-host.xml"), "--state-dir", str(tmp_path),
         "--instances-path", str(tmp_path), "--interval", "3600", "--provider-name", name],
        env=environment, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        samples = _wait_for_first_pass_metrics(metrics_port)
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        returncode = process.wait(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
    stderr = process.stderr.read() if process.stderr else ""

    passes = ("placement_agent_passes_total", (("outcome", "synced"), ("provider", name)))
    drift = ("placement_agent_drift", (("kind", "domain_without_allocation"), ("provider", name)))
    assert samples[passes] == 1
    assert samples[drift] == 0
    assert returncode == 0, stderr
    assert time.monotonic() - started < 3
    assert "SIGTERM" in stderr


def _wait_for_first_pass_metrics(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Poll /metrics until the first pass has been counted."""
    for _ in range(200):
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        except httpx.HTTPError:
            text = ""
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }
        if any(name == "placement_agent_passes_total" for name, _ in samples):
            return samples
        time.sleep(0.05)
    pytest.fail("the agent did not count a pass within 10 s")
