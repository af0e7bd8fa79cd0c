"""The agent and the scheduler on their normal paths against an API that validates
Keystone tokens (``PLACEMENT_AUTH_STRATEGY=keystone``, keystonemiddleware configured
by ``[keystone_authtoken]``): password and application credentials, the endpoint
from the catalog, tokens that expire mid-run and a token revoked mid-run."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agent.placement import AgentPlacement
from agent.reporting_pass import Outcome, ReportingPass
from agent.settings import AgentSettings
from placement_api.db import migrations
from placement_client import AuthOptions, PlacementClient
from scheduler.serving.service import create_app
from scheduler.settings import SchedulerSettings
from tests.client.keystone_cloud import os_password, register_placement, token_holder
from tests.support.keystone import ApplicationCredential, Keystone, User
from tests.support.server import live_server

# On the worker that runs the other Keystone tests (one Keystone per worker).
pytestmark = pytest.mark.xdist_group("keystone")

AGENT = Path(sys.executable).parent / "placement-agent"
# Longer than keystoneauth1's two-minute margin by a few seconds: a token is reused
# for those seconds, then renewed before every request.
SHORT_TOKEN_SECONDS = 125
FLAVOR = {"VCPU": 2, "MEMORY_MB": 1024}


@dataclass(frozen=True)
class KeystonePlacement:
    keystone: Keystone
    url: str
    region: str
    project_id: str
    project_name: str
    admin: User

    def password_variables(self, auth_url: str | None = None) -> dict[str, str]:
        return os_password(self.keystone, self.admin, self.project_name, self.region, auth_url)

    def application_credential(self) -> ApplicationCredential:
        return self.keystone.create_application_credential(self.admin, self.project_id)

    def client(self) -> PlacementClient:
        return PlacementClient.connect(AuthOptions(), environ=self.password_variables())


@pytest.fixture(scope="module")
def keystone_placement(
    keystone: Keystone, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KeystonePlacement]:
    directory = tmp_path_factory.mktemp("keystone-placement")
    database_url = f"sqlite+aiosqlite:///{directory / 'placement.sqlite'}"
    migrations.upgrade(database_url)
    # No validated-token cache, so a revoked token is refused at once.
    options = keystone.authtoken_options(keystone.service_user()) | {"token_cache_time": "-1"}
    config = directory / "placement.conf"
    config.write_text(
        "[api]\nauth_strategy = keystone\n[keystone_authtoken]\n"
        + "".join(f"{name} = {value}\n" for name, value in options.items())
    )
    with live_server(
        database_url, PLACEMENT_AUTH_STRATEGY="keystone", PLACEMENT_CONFIG_FILE=str(config)
    ) as server:
        region = register_placement(keystone, {"public": server.url})
        project_name = f"compute-{uuid.uuid4().hex[:8]}"
        project_id = keystone.create_project(project_name)
        admin = keystone.user_with_roles("admin", project_id=project_id)
        yield KeystonePlacement(keystone, server.url, region, project_id, project_name, admin)


def run_agent(
    *arguments: str, env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("PLACEMENT_AGENT_", "OS_"))
    }
    command = [
        str(AGENT), "--once", "--libvirt-uri", "test:///default",
        "--state-dir", str(tmp_path / "state"), "--instances-path", str(tmp_path),
        "--provider-name", f"kvm-{uuid.uuid4().hex[:8]}", *arguments,
    ]  # fmt: skip
    return subprocess.run(
        command, env=environment | env, capture_output=True, text=True, timeout=120, check=False
    )


async def reported_vcpus(placement: KeystonePlacement, completed: Any) -> int:
    name = completed.args[completed.args.index("--provider-name") + 1]
    async with placement.client() as client:
        found = (await client.get("/resource_providers", {"name": name}))["resource_providers"]
        inventories = await client.get(f"/resource_providers/{found[0]['uuid']}/inventories")
    total: int = inventories["inventories"]["VCPU"]["total"]
    return total


async def test_the_agent_reports_with_os_password_variables_to_the_catalog_endpoint(
    keystone_placement: KeystonePlacement, tmp_path: Path
) -> None:
    completed = run_agent(env=keystone_placement.password_variables(), tmp_path=tmp_path)
    # test:///default runs one domain nobody holds an allocation for: drift, reported.
    assert completed.returncode == Outcome.DRIFT, completed.stderr
    assert await reported_vcpus(keystone_placement, completed) == 16


async def test_the_agent_reports_with_an_application_credential_section(
    keystone_placement: KeystonePlacement, tmp_path: Path
) -> None:
    credential = keystone_placement.application_credential()
    config = tmp_path / "agent.conf"
    config.write_text(
        "[placement]\nauth_type = v3applicationcredential\n"
        f"auth_url = {keystone_placement.keystone.url}\n"
        f"application_credential_id = {credential.id}\n"
        f"application_credential_secret = {credential.secret}\n"
        f"region_name = {keystone_placement.region}\nvalid_interfaces = public\n"
    )
    completed = run_agent("--auth-config", str(config), env={}, tmp_path=tmp_path)
    assert completed.returncode == Outcome.DRIFT, completed.stderr
    assert await reported_vcpus(keystone_placement, completed) == 16


class Recorder(httpx.AsyncHTTPTransport):
    """Real HTTP; records the token of every request as it is sent, and its
    status once answered (a long poll of the change feed is answered late)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []
        self.seen: list[tuple[str, str | None, int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        token = request.headers.get("x-auth-token")
        if token:
            self.sent.append(token)
        response = await super().handle_async_request(request)
        self.seen.append((request.url.path, token, response.status_code))
        return response

    def tokens(self) -> list[str]:
        """The tokens sent, in the order the requests were sent."""
        return list(self.sent)


@pytest.fixture
async def hosts(keystone_placement: KeystonePlacement) -> AsyncIterator[list[str]]:
    made: list[str] = []
    async with keystone_placement.client() as client:
        for _ in range(2):
            name = f"host-{uuid.uuid4().hex[:8]}"
            rp = await client.post("/resource_providers", {"name": name})
            inventories = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}}
            await client.put(
                f"/resource_providers/{rp['uuid']}/inventories",
                {"resource_provider_generation": 0, "inventories": inventories},
            )
            made.append(rp["uuid"])
        yield made
        for rp in made:
            allocations = await client.get(f"/resource_providers/{rp}/allocations")
            for consumer in allocations["allocations"]:
                await client.delete(f"/allocations/{consumer}")
            await client.delete(f"/resource_providers/{rp}")


@pytest.fixture
def scheduler_with(
    monkeypatch: pytest.MonkeyPatch,
) -> Any:
    """The scheduler service as ``placement-scheduler serve`` builds it, its settings from
    ``OS_*`` variables (or a section), its requests to Placement recorded."""

    def build(variables: dict[str, str], **settings: Any) -> tuple[FastAPI, Recorder]:
        for name in [n for n in os.environ if n.startswith("OS_")]:
            monkeypatch.delenv(name)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        recorder = Recorder()
        app = create_app(SchedulerSettings(host_cache_seconds=0, **settings), transport=recorder)
        return app, recorder

    return build


async def schedule(app: FastAPI) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
        response = await http.post("/v1/schedule", json={"resources": FLAVOR})
    assert response.status_code == 200, response.text
    decided: dict[str, Any] = response.json()
    return decided


async def claimed_on(placement: KeystonePlacement, decided: dict[str, Any]) -> dict[str, Any]:
    selection = decided["selections"][0]
    async with placement.client() as client:
        held = await client.get(f"/allocations/{selection['consumer_uuid']}")
    return {rp: entry["resources"] for rp, entry in held["allocations"].items()}


async def test_the_scheduler_schedules_and_claims_with_os_password_variables(
    keystone_placement: KeystonePlacement, hosts: list[str], scheduler_with: Any
) -> None:
    app, recorder = scheduler_with(keystone_placement.password_variables())
    async with app.router.lifespan_context(app):
        decided = await schedule(app)
    assert list((await claimed_on(keystone_placement, decided)).values()) == [FLAVOR]
    assert len(set(recorder.tokens())) == 1  # one token for the whole decision


async def test_the_scheduler_schedules_with_an_application_credential_section(
    keystone_placement: KeystonePlacement, hosts: list[str], scheduler_with: Any, tmp_path: Path
) -> None:
    credential = keystone_placement.application_credential()
    config = tmp_path / "scheduler.conf"
    config.write_text(
        "[placement]\nauth_type = v3applicationcredential\n"
        f"auth_url = {keystone_placement.keystone.url}\n"
        f"application_credential_id = {credential.id}\n"
        f"application_credential_secret = {credential.secret}\n"
        f"region_name = {keystone_placement.region}\n"
    )
    app, recorder = scheduler_with({}, auth_config_file=config)
    async with app.router.lifespan_context(app):
        decided = await schedule(app)
    assert list((await claimed_on(keystone_placement, decided)).values()) == [FLAVOR]
    holder = token_holder(keystone_placement.keystone, recorder.tokens()[0])
    assert holder["application_credential"]["id"] == credential.id


@pytest.fixture(scope="module")
def short_lived(keystone_placement: KeystonePlacement) -> Iterator[Keystone]:
    """A Keystone (same data) whose tokens expire a few seconds after keystoneauth1
    stops reusing them."""
    with keystone_placement.keystone.with_token_expiration(SHORT_TOKEN_SECONDS) as issuer:
        yield issuer


def assert_renewed(recorder: Recorder, sent_before: int, sent_during: int) -> None:
    """No token sent before the wait is sent after it (requests sent during it, such
    as the scheduler's change-feed polls, may still carry one): each was renewed
    before it expired."""
    tokens = recorder.tokens()
    before, after = set(tokens[:sent_before]), set(tokens[sent_before + sent_during :])
    assert before
    assert after
    assert not before & after


async def test_the_agent_renews_a_token_that_expires_between_passes(
    keystone_placement: KeystonePlacement, short_lived: Keystone, tmp_path: Path
) -> None:
    settings = AgentSettings(
        libvirt_uri="test:///default",
        state_dir=tmp_path / "state",
        instances_path=tmp_path,
        provider_name=f"kvm-{uuid.uuid4().hex[:8]}",
    )
    variables = keystone_placement.password_variables(short_lived.url)
    recorder = Recorder()
    client = PlacementClient.connect(settings.auth_options(), variables, transport=recorder)
    async with client:
        reporting = ReportingPass(settings, AgentPlacement(client))
        first = await reporting.run()
        sent = len(recorder.tokens())
        await asyncio.sleep(6)  # every token so far now expires within keystoneauth1's margin
        during = len(recorder.tokens()) - sent
        second = await reporting.run()
    assert (first.outcome, second.outcome) == (Outcome.DRIFT, Outcome.DRIFT)
    assert_renewed(recorder, sent, during)


async def test_the_scheduler_renews_a_token_that_expires_between_requests(
    keystone_placement: KeystonePlacement,
    short_lived: Keystone,
    hosts: list[str],
    scheduler_with: Any,
) -> None:
    app, recorder = scheduler_with(keystone_placement.password_variables(short_lived.url))
    async with app.router.lifespan_context(app):
        first = await schedule(app)
        sent = len(recorder.tokens())
        await asyncio.sleep(6)  # every token so far now expires within keystoneauth1's margin
        during = len(recorder.tokens()) - sent
        second = await schedule(app)
    assert_renewed(recorder, sent, during)
    for decided in (first, second):
        assert list((await claimed_on(keystone_placement, decided)).values()) == [FLAVOR]


async def test_a_token_revoked_mid_run_is_refused_once_then_replaced(
    keystone_placement: KeystonePlacement, hosts: list[str], scheduler_with: Any
) -> None:
    keystone = keystone_placement.keystone
    app, recorder = scheduler_with(keystone_placement.password_variables())
    async with app.router.lifespan_context(app):
        await schedule(app)
        revoked = recorder.tokens()[-1]
        async with httpx.AsyncClient() as http:
            response = await http.delete(
                f"{keystone.url}/auth/tokens",
                headers={"x-auth-token": keystone.admin_token(), "x-subject-token": revoked},
            )
        assert response.status_code == 204
        decided = await schedule(app)
    # Refused once per request under way with it: the decision's, and the feed's poll.
    refused = [token for _, token, status in recorder.seen if status == 401]
    assert refused
    assert set(refused) == {revoked}
    assert recorder.tokens()[-1] != revoked
    assert list((await claimed_on(keystone_placement, decided)).values()) == [FLAVOR]
