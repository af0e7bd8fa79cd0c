"""A real Placement API server per backend, and helpers to run the agent against it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.discovery import HostFacts
from agent.placement import AgentPlacement
from agent.reporting_pass import PassResult, ReportingPass, discover
from agent.settings import AgentSettings
from placement_api.db import migrations
from placement_client import PlacementClient
from tests.support import databases
from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[2]
ADMIN_HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
SERVER_START_TIMEOUT = 30.0


@dataclass
class PlacementServer:
    """``python -m placement_api serve`` on its own port and database."""

    backend: str
    database_url: str
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        environment = os.environ | {"PLACEMENT_DATABASE_URL": self.database_url}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "placement_api", "serve", "--host", "127.0.0.1",
                 "--port", str(self.port), "--log-level", "warning"],
                cwd=REPO, env=environment, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self._wait_until_answering()

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def _wait_until_answering(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                break
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        log_tail = self.log_path.read_text()[-3000:]
        pytest.fail(f"placement API ({self.backend}) did not start:\n{log_tail}")


@pytest.fixture(scope="session", params=databases.BACKENDS)
def placement_server(request: pytest.FixtureRequest) -> Iterator[PlacementServer]:
    with tempfile.TemporaryDirectory(prefix="agent-api-") as directory:
        log_path = Path(directory) / "server.log"
        if request.param == "sqlite":
            url = f"sqlite+aiosqlite:///{Path(directory) / 'placement.sqlite'}"
            server = PlacementServer("sqlite", url, log_path)
            server.start()
            yield server
            server.stop()
            return
        name, url = asyncio.run(databases.create_pg_database())
        try:
            migrations.upgrade(url)
            server = PlacementServer("postgresql", url, log_path)
            server.start()
            yield server
            server.stop()
        finally:
            asyncio.run(databases.drop_pg_database(name))


@pytest.fixture
def placement(placement_server: PlacementServer) -> Iterator[httpx.Client]:
    """An admin client of the running server, for set-up and for checking results."""
    if placement_server.process is None:
        placement_server.start()
    with httpx.Client(base_url=placement_server.url, headers=ADMIN_HEADERS, timeout=10) as client:
        yield client


@pytest.fixture
def agent_settings(tmp_path: Path, placement_server: PlacementServer):
    """Settings for one agent; each test's agent reports under a name of its own."""

    def make(node_file: Path, **changes: Any) -> AgentSettings:
        values: dict[str, Any] = {
            "api_url": placement_server.url,
            "token": "admin",
            "libvirt_uri": f"test://{node_file.resolve()}",
            "state_dir": tmp_path / f"state-{node_file.stem}",
            "instances_path": tmp_path,
            "provider_name": f"{node_file.stem}-{uuid.uuid4().hex[:8]}",
            "interval": 60.0,
        }
        return AgentSettings(**(values | changes))

    return make


async def one_pass(
    settings: AgentSettings,
    discover_host: Callable[[AgentSettings], HostFacts] = discover,
    **http_options: Any,
) -> PassResult:
    """One pass as an admin that also has the service role, as the agent's Keystone user
    has: moving allocations (POST /reshaper) is a service's action."""
    hooks = http_options.pop("event_hooks", {})
    hooks = hooks | {"request": [_with_service_role, *hooks.get("request", [])]}
    client = PlacementClient.with_token(
        settings.api_url, "admin", timeout=10.0, event_hooks=hooks, **http_options
    )
    async with client:
        return await ReportingPass(settings, AgentPlacement(client), discover_host).run()


async def _with_service_role(request: httpx.Request) -> None:
    request.headers["x-roles"] = "admin,service"
