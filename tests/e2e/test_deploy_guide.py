"""docs/deploy.md, followed: the env file and the unit's ExecStart of ``deploy/``
start the API on PostgreSQL with several workers, as the guide says.

Only what is site-specific changes: addresses and ports (free loopback
ones), the database (a fresh one), paths under /etc and /run, and the
authentication strategy (Keystone is exercised by the authentication tests).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import databases
from tests.support.server import free_port, wait_until_up

REPOSITORY = Path(__file__).resolve().parents[2]
DEPLOY = REPOSITORY / "deploy"
GUIDE = REPOSITORY / "docs" / "deploy.md"
INSTALLED_BIN = "/opt/placement/bin/"


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, as systemd's EnvironmentFile= reads them."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            found[name] = value
    return found


def exec_start(unit: Path) -> list[str]:
    [line] = [line for line in unit.read_text().splitlines() if line.startswith("ExecStart=")]
    command = shlex.split(line.removeprefix("ExecStart="))
    assert command[0].startswith(INSTALLED_BIN)
    return [str(Path(sys.executable).parent / command[0].removeprefix(INSTALLED_BIN)), *command[1:]]


def test_the_guide_names_every_deploy_file_and_the_commands_it_runs() -> None:
    guide = GUIDE.read_text()
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file():
            assert f"deploy/{path.relative_to(DEPLOY)}" in guide
    assert "/opt/placement/bin/placement-api db upgrade" in guide
    assert (
        "ExecStart=/opt/placement/bin/placement-api serve"
        in (DEPLOY / "systemd" / "placement-api.service").read_text()
    )
    assert "`/opt/placement/bin/placement-api serve`" in guide


@pytest.fixture
def postgresql_url() -> Iterator[str]:
    if "postgresql" not in databases.BACKENDS:
        pytest.skip("PostgreSQL backend not selected")
    name, url = asyncio.run(databases.create_pg_database())
    try:
        yield url
    finally:
        asyncio.run(databases.drop_pg_database(name))


def test_api_starts_as_the_guide_says(postgresql_url: str, tmp_path: Path) -> None:
    configured = env_file(DEPLOY / "env" / "placement-api.env")
    assert int(configured["PLACEMENT_WORKERS"]) > 1
    assert configured["PLACEMENT_DATABASE_URL"].startswith("postgresql+asyncpg://")
    port, metrics_port = free_port(), free_port()
    site = {
        "PLACEMENT_DATABASE_URL": postgresql_url,
        "PLACEMENT_HOST": "127.0.0.1",
        "PLACEMENT_PORT": str(port),
        "PLACEMENT_METRICS_HOST": "127.0.0.1",
        "PLACEMENT_METRICS_PORT": str(metrics_port),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "run" / "metrics"),
        "PLACEMENT_HEALTHCHECK_DISABLE_FILE": str(tmp_path / "healthcheck-disable"),
        "PLACEMENT_AUTH_STRATEGY": "noauth2",
        # One per core, as the guide says; the test machine's, not the example's.
        "PLACEMENT_WORKERS": "2",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
    }
    assert set(site) <= set(configured) | {"PLACEMENT_DATABASE_URL"}
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_")}
    env = inherited | {k: v for k, v in configured.items() if k != "PLACEMENT_CONFIG_FILE"} | site
    placement_api = str(Path(sys.executable).parent / "placement-api")

    upgraded = subprocess.run(
        [placement_api, "db", "upgrade"], env=env, capture_output=True, text=True, timeout=120
    )
    assert upgraded.returncode == 0, upgraded.stderr
    process = subprocess.Popen(
        exec_start(DEPLOY / "systemd" / "placement-api.service"),
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, timeout=180)
        assert httpx.get(f"{url}/healthcheck").status_code == 200
        scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert "placement_http_requests_total" in scraped.text
        Path(site["PLACEMENT_HEALTHCHECK_DISABLE_FILE"]).touch()
        drained = httpx.get(f"{url}/healthcheck")
        assert drained.status_code == 503
        assert drained.text == "OK\nDISABLED BY FILE"
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert b'"logger": "placement_api.access"' in stderr
