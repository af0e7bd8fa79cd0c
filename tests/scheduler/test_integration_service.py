"""The scheduler's HTTP service and CLI, talking to a real Placement server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from httpx import ASGITransport

from scheduler.serving.service import create_app
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import Cloud, LivePlacement, new_uuid
from tests.support.server import free_port

FLAVOR = {"vcpus": 2, "memory_mb": 4096, "root_gb": 40}


@pytest.fixture
async def service(scheduler_settings: SchedulerSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(scheduler_settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
            yield http


async def test_schedule_accepts_a_flavor_and_answers_selections_with_explanation(
    cloud: Cloud, service: httpx.AsyncClient
) -> None:
    rp = await cloud.host("compute-1")
    consumer = new_uuid()
    response = await service.post(
        "/v1/schedule", json={"flavor": FLAVOR, "consumer_uuids": [consumer]}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    (selection,) = body["selections"]
    assert selection["provider"] == {"uuid": rp, "name": "compute-1"}
    assert selection["allocations"] == {
        rp: {"resources": {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}}
    }
    assert body["explanation"]["instances"][0]["chosen"]["host"] == "compute-1"
    assert await cloud.allocations(consumer) == {rp: {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}}


async def test_no_valid_host_is_a_409_with_the_explanation(
    cloud: Cloud, service: httpx.AsyncClient
) -> None:
    await cloud.host("compute-1", traits=("COMPUTE_STATUS_DISABLED",))
    response = await service.post("/v1/schedule", json={"flavor": FLAVOR})
    assert response.status_code == 409
    body = response.json()
    error = body["errors"][0]
    assert error["code"] == "scheduler.no_valid_host"
    assert "compute_enabled removed the last 1 host(s)" in error["detail"]
    assert body["explanation"]["failure"]["stage"] == "filter"
    metrics = (await service.get("/metrics")).text
    assert 'placement_scheduler_no_valid_host_total{stage="filter"} 1.0' in metrics


async def test_release_deletes_the_consumers_allocations(
    cloud: Cloud, service: httpx.AsyncClient
) -> None:
    rp = await cloud.host("compute-1")
    placed = (await service.post("/v1/schedule", json={"flavor": FLAVOR})).json()
    consumer = placed["selections"][0]["consumer_uuid"]
    response = await service.post("/v1/release", json={"consumer_uuids": [consumer]})
    assert response.json() == {"released": [consumer], "not_found": []}
    assert not any((await cloud.usages(rp)).values())


async def test_health_reports_placement_reachable(
    live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    response = await service.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "placement_reachable": True}


@pytest.fixture
def scheduler_process(live_placement: LivePlacement) -> Iterator[str]:
    port = free_port()
    env = dict(os.environ, PLACEMENT_SCHEDULER_PROVIDER_CACHE_SECONDS="0")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduler",
            "serve",
            "--api-url",
            live_placement.url,
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        try:
            if httpx.get(f"{url}/v1/filters", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("scheduler did not start")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("live_placement", ["sqlite"], indirect=True)  # the CLI, not the DB
async def test_cli_prints_the_decision_and_the_explanation(
    cloud: Cloud, scheduler_process: str
) -> None:
    await cloud.host("compute-a", memory_mb=8192)
    await cloud.host("compute-b", memory_mb=65536)
    placed = _cli(
        "schedule",
        "--url",
        scheduler_process,
        "--vcpus",
        "2",
        "--memory-mb",
        "4096",
        "--disk-gb",
        "40",
    )
    assert placed.returncode == 0, placed.stderr
    assert "compute-b" in placed.stdout
    assert "Filters (2 candidate hosts)" in placed.stdout
    assert "Best hosts" in placed.stdout
    refused = _cli("schedule", "--url", scheduler_process, "--vcpus", "2", "--memory-mb", "999999")
    assert refused.returncode == 1
    assert "No valid host" in refused.stdout + refused.stderr
    assert "no provider has 999999 MEMORY_MB free" in refused.stdout


@pytest.mark.parametrize("live_placement", ["sqlite"], indirect=True)  # the CLI, not the DB
def test_cli_plugins_list_as_csv_and_json(scheduler_process: str) -> None:
    listed = _cli("plugins", "--url", scheduler_process, "-f", "csv")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header == "kind,position,name,multiplier,description"
    assert {row.split(",")[0] for row in rows} == {"filter", "weigher"}
    document = json.loads(_cli("plugins", "--url", scheduler_process, "-f", "json").stdout)
    assert document["filters"]["enabled"][0]["position"] == 0


@pytest.mark.parametrize("live_placement", ["sqlite"], indirect=True)  # the CLI, not the DB
async def test_cli_schedules_a_named_flavor_from_the_flavors_file(
    cloud: Cloud, scheduler_process: str, tmp_path: Path
) -> None:
    await cloud.host("compute-a", memory_mb=8192)
    await cloud.host("compute-b", memory_mb=65536)
    flavors = tmp_path / "flavors.yaml"
    flavors.write_text(
        "m1.small:\n  vcpus: 1\n  memory_mb: 2048\n"
        "r1.large:\n  vcpus: 2\n  memory_mb: 32768\n  root_gb: 10\n"
    )
    placed = _cli("schedule", "--url", scheduler_process, "--flavors-file", str(flavors),
                  "--flavor", "r1.large", "--json")  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    assert placed.stdout.count('"name": "compute-b"') >= 1
    assert "compute-a" not in placed.stdout.split('"selections"')[1].split("]")[0]
    unknown = _cli("schedule", "--url", scheduler_process, "--flavors-file", str(flavors),
                   "--flavor", "m9.huge")  # fmt: skip
    assert unknown.returncode == 2
    assert "m1.small, r1.large" in unknown.stderr


def test_cli_without_a_scheduler_says_so_in_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for command in (("schedule", "--vcpus", "1"), ("plugins",), ("release", new_uuid())):
        result = _cli(*command, "--url", url)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert f"cannot reach the scheduler at {url}" in result.stderr
