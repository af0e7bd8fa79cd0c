"""Metrics and logs of a real ``placement-api serve`` with several workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.server import free_port, wait_until_up

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


def _requests_counted(text: str, route: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "placement_http_requests_total"
                and sample.labels["route"] == route
                and sample.labels["method"] == "GET"
            ):
                total += sample.value
    return total


@pytest.mark.parametrize("workers", [1, 2])
def test_metrics_add_up_across_workers_and_logs_are_json_lines(
    tmp_path: Path, workers: int
) -> None:
    port, metrics_port = free_port(), free_port()
    samples_dir = tmp_path / "prometheus"
    samples_dir.mkdir()
    (samples_dir / "counter_999999.db").write_bytes(b"stale from a previous run")
    env = dict(
        os.environ,
        PLACEMENT_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite",
        PLACEMENT_METRICS_ENABLED="true",
        PLACEMENT_METRICS_PORT=str(metrics_port),
        PLACEMENT_LOG_FORMAT="json",
        PROMETHEUS_MULTIPROC_DIR=str(samples_dir),
    )
    command = [sys.executable, "-m", "placement_api", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, timeout=180)
        for _ in range(20):
            assert httpx.get(f"{url}/resource_providers", headers=HEADERS).status_code == 200
        # Whichever worker answers the scrape, it reports what both served.
        for _ in range(4):
            own_port = httpx.get(f"{url}/metrics", headers=HEADERS)
            assert _requests_counted(own_port.text, "/resource_providers") == 20
        separate = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert separate.status_code == 200
        assert _requests_counted(separate.text, "/resource_providers") == 20
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    access = []
    for line in stderr.decode().splitlines():
        record = json.loads(line)
        if record["logger"] == "placement_api.access":
            access.append(record)
    listed = [r for r in access if r["route"] == "/resource_providers"]
    assert len(listed) == 20
    assert {r["status"] for r in listed} == {200}
    assert all(r["request_id"].startswith("req-") and r["user_id"] == "admin" for r in listed)
    assert not (samples_dir / "counter_999999.db").exists()
