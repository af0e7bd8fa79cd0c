"""The commands the docs show work, run as written against a live server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.docs.blocks import ROOT, annotated_error_statuses, blocks, documents_with
from tests.support.server import LiveServer, live_server
from tests.support.tool_venv import tool_venv

OPENSTACK_CLI = ["python-openstackclient==10.5.0", "osc-placement==4.9.1"]
ADMIN = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}"


@pytest.fixture
def server(database_url: str) -> Iterator[LiveServer]:
    with live_server(database_url) as running:
        yield running


def run_shell(
    script: str, server: LiveServer, path: str = "", database_url: str = ""
) -> subprocess.CompletedProcess[str]:
    """``database_url``: the server's, for the blocks that run ``placement-api`` commands."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("OS_")} | {
        "PLACEMENT_URL": server.url
    }
    # The programs of this checkout's virtualenv, as `make install` puts them there.
    environment["PATH"] = f"{Path(sys.executable).parent}:{environment['PATH']}"
    if path:
        environment["PATH"] = f"{path}:{environment['PATH']}"
    if database_url:
        environment["PLACEMENT_DATABASE_URL"] = database_url
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _error_statuses(output: str) -> list[int]:
    lines = [line for line in output.splitlines() if line.startswith('{"errors"')]
    return [json.loads(line)["errors"][0]["status"] for line in lines]


@pytest.mark.parametrize("document", documents_with("session"), ids=lambda p: p.name)
def test_session_blocks_of_the_docs_run_without_failure(
    document: Path, server: LiveServer, database_url: str
) -> None:
    script = blocks(document, "session")
    result = run_shell(script, server, database_url=database_url)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert _error_statuses(result.stdout) == annotated_error_statuses(script), result.stdout


def test_readme_session_claims_resources_and_shows_a_conflict(server: LiveServer) -> None:
    result = run_shell(blocks(ROOT / "README.md", "session"), server)
    assert result.returncode == 0, result.stderr
    providers = httpx.get(f"{server.url}/resource_providers", headers=ADMIN).json()
    [provider] = providers["resource_providers"]
    assert provider["name"] == "compute-1"
    base = f"{server.url}/resource_providers/{provider['uuid']}"
    usages = httpx.get(f"{base}/usages", headers=ADMIN).json()["usages"]
    assert usages == {"VCPU": 2, "MEMORY_MB": 4096}
    assert httpx.get(f"{base}/traits", headers=ADMIN).json()["traits"] == ["CUSTOM_FAST_DISK"]
    last = json.loads(result.stdout.splitlines()[-1])
    assert last["errors"][0]["code"] == "placement.concurrent_update"


def test_openstack_cli_commands_of_the_readme_work(server: LiveServer) -> None:
    cli = tool_venv("openstack-cli", OPENSTACK_CLI)
    readme = ROOT / "README.md"
    assert run_shell(blocks(readme, "session"), server).returncode == 0
    result = run_shell(blocks(readme, "osc"), server, str(cli))
    assert result.returncode == 0, result.stderr
    assert "compute-1" in result.stdout
    assert "CUSTOM_FAST_DISK" in result.stdout  # the candidate's traits
    assert "VCPU=2,MEMORY_MB=4096" in result.stdout  # the allocation candidate
    assert "consumer_count" in result.stdout  # usage of the project, by consumer type


def test_readme_starts_with_the_two_commands_and_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[3].startswith("make run")
    assert lines[4].startswith("make test")
    assert len(lines) <= 150, "depth belongs in docs/"
