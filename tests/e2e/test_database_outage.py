"""The served API while its PostgreSQL goes away, under a stream of writes and
reads: 503s (with Retry-After) while it is stopped or frozen, no dropped
connection, service again within seconds of its return, and every write
either wholly applied or not at all.

PostgreSQL here is a private cluster the test starts on a spare port, so
that stopping and freezing it disturbs nobody else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from placement_api.db import migrations
from tests.support.databases import BACKENDS
from tests.support.pg_cluster import PrivateCluster, private_cluster, server_binaries
from tests.support.server import LiveServer, free_port, live_server

pytestmark = [
    pytest.mark.skipif(
        server_binaries() is None or "postgresql" not in BACKENDS,
        reason="needs PostgreSQL server binaries to start a private cluster",
    ),
    pytest.mark.xdist_group("private_postgresql"),
]

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}
REQUEST_TIMEOUT = 4.0
LIMITS: dict[str, Any] = {
    "PLACEMENT_DATABASE_STATEMENT_TIMEOUT": "1",
    "PLACEMENT_DATABASE_LOCK_TIMEOUT": "1",
    "PLACEMENT_DATABASE_CONNECT_TIMEOUT": "1",
    "PLACEMENT_DATABASE_POOL_TIMEOUT": "1",
    "PLACEMENT_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT),
    "PLACEMENT_RETRY_AFTER": "1",
}
PAIRS = 4
WRITERS = 8
READERS = 4


@dataclass
class Outcome:
    kind: str  # "write" or "read"
    consumer: str | None
    status: int
    sent: float
    done: float
    retry_after: str | None = None


@dataclass
class Traffic:
    outcomes: list[Outcome] = field(default_factory=list)
    transport_errors: list[str] = field(default_factory=list)
    running: bool = True


@dataclass(frozen=True)
class Pair:
    compute: str
    memory: str


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    with private_cluster() as running:

        async def create() -> None:
            admin = await asyncpg.connect(running.url().replace("+asyncpg", ""))
            try:
                await admin.execute("CREATE DATABASE placement")
            finally:
                await admin.close()

        asyncio.run(create())
        migrations.upgrade(running.url("placement"))
        yield running


@pytest.fixture(scope="module")
def server(cluster: PrivateCluster) -> Iterator[LiveServer]:
    with live_server(cluster.url("placement"), **LIMITS) as running:
        yield running


def _provider(client: httpx.Client, resource: str) -> str:
    created = client.post("/resource_providers", json={"name": f"rp-{uuid.uuid4().hex[:8]}"})
    assert created.status_code == 200, created.text
    provider: str = created.json()["uuid"]
    inventory = client.put(
        f"/resource_providers/{provider}/inventories",
        json={"resource_provider_generation": 0, "inventories": {resource: {"total": 10**6}}},
    )
    assert inventory.status_code == 200, inventory.text
    return provider


@pytest.fixture(scope="module")
def pairs(server: LiveServer) -> list[Pair]:
    with httpx.Client(base_url=server.url, headers=HEADERS) as client:
        return [
            Pair(_provider(client, "VCPU"), _provider(client, "MEMORY_MB")) for _ in range(PAIRS)
        ]


async def _write(client: httpx.AsyncClient, traffic: Traffic, pair: Pair) -> None:
    consumer = str(uuid.uuid4())
    body = {
        "allocations": {
            pair.compute: {"resources": {"VCPU": 1}},
            pair.memory: {"resources": {"MEMORY_MB": 64}},
        },
        "project_id": "project",
        "user_id": "user",
        "consumer_generation": None,
    }
    sent = time.monotonic()
    response = await client.put(f"/allocations/{consumer}", json=body)
    traffic.outcomes.append(
        Outcome(
            "write",
            consumer,
            response.status_code,
            sent,
            time.monotonic(),
            response.headers.get("retry-after"),
        )
    )


async def _read(client: httpx.AsyncClient, traffic: Traffic, pair: Pair) -> None:
    sent = time.monotonic()
    response = await client.get(f"/resource_providers/{pair.compute}/usages")
    traffic.outcomes.append(
        Outcome(
            "read", None, response.status_code, sent, time.monotonic(),
            response.headers.get("retry-after"),
        )
    )  # fmt: skip


async def _client_loop(
    client: httpx.AsyncClient, traffic: Traffic, pairs: list[Pair], index: int, writes: bool
) -> None:
    step = 0
    while traffic.running:
        pair = pairs[(index + step) % len(pairs)]
        step += 1
        try:
            await (_write if writes else _read)(client, traffic, pair)
        except httpx.TransportError as exc:
            traffic.transport_errors.append(repr(exc))
        await asyncio.sleep(0.01)


def _first_success_after(traffic: Traffic, moment: float) -> float | None:
    done = [o.done for o in traffic.outcomes if o.sent >= moment and o.status < 300]
    return min(done) - moment if done else None


def _during(traffic: Traffic, start: float, end: float) -> list[Outcome]:
    return [o for o in traffic.outcomes if o.sent >= start and o.done <= end]


async def _with_traffic(
    server: LiveServer, pairs: list[Pair], outage: Outage
) -> tuple[Traffic, dict[str, float]]:
    traffic = Traffic()
    limits = httpx.Limits(max_connections=WRITERS + READERS)
    async with httpx.AsyncClient(
        base_url=server.url, headers=HEADERS, limits=limits, timeout=30
    ) as client:
        loops = [
            asyncio.ensure_future(_client_loop(client, traffic, pairs, i, i < WRITERS))
            for i in range(WRITERS + READERS)
        ]
        try:
            await asyncio.sleep(1.5)
            moments = await outage.run()
            await asyncio.sleep(1.5)
        finally:
            traffic.running = False
            await asyncio.gather(*loops)
    return traffic, moments


@dataclass
class Outage:
    cluster: PrivateCluster
    frozen: bool
    length: float = 3.0

    async def run(self) -> dict[str, float]:
        """Take the database away for ``length`` seconds, then back; when each happened."""
        began = time.monotonic()
        await asyncio.to_thread(self.cluster.freeze if self.frozen else self.cluster.stop)
        gone = time.monotonic()
        await asyncio.sleep(self.length)
        returning = time.monotonic()
        await asyncio.to_thread(self.cluster.thaw if self.frozen else self.cluster.start)
        back = time.monotonic()
        await asyncio.sleep(5)
        return {"began": began, "gone": gone, "returning": returning, "back": back}


def _check_consistency(server: LiveServer, pairs: list[Pair], traffic: Traffic) -> None:
    """What each writer saw against what the database holds: a 204 is wholly
    there; anything else is wholly there (a commit whose answer was lost)
    or not at all. Usages equal the sum of allocations."""
    with httpx.Client(base_url=server.url, headers=HEADERS) as client:
        for outcome in (o for o in traffic.outcomes if o.kind == "write"):
            found = client.get(f"/allocations/{outcome.consumer}").json()["allocations"]
            held = {u: a["resources"] for u, a in found.items()}
            if outcome.status == 204:
                assert len(held) == 2, (outcome, held)
            else:
                assert len(held) in (0, 2), (outcome, held)
        for pair in pairs:
            for provider, resource in ((pair.compute, "VCPU"), (pair.memory, "MEMORY_MB")):
                usages = client.get(f"/resource_providers/{provider}/usages").json()["usages"]
                allocations = client.get(f"/resource_providers/{provider}/allocations").json()
                total = sum(
                    a["resources"].get(resource, 0) for a in allocations["allocations"].values()
                )
                assert usages.get(resource, 0) == total


def _unexpected_log(server: LiveServer) -> str:
    """The server's log, without the line each 503 writes."""
    lines = server.log_text().splitlines()
    return "\n".join(line for line in lines if "database unavailable" not in line)[-8000:]


def _check_outage_answers(
    server: LiveServer, traffic: Traffic, moments: dict[str, float], bound: float
) -> None:
    assert traffic.transport_errors == [], _unexpected_log(server)
    failures = [o for o in traffic.outcomes if o.status >= 500 and o.status != 503]
    assert failures == [], _unexpected_log(server)
    while_gone = _during(traffic, moments["gone"], moments["returning"])
    assert while_gone, "no request was answered while the database was away"
    assert {o.status for o in while_gone} == {503}
    assert {o.retry_after for o in while_gone} == {"1"}
    assert max(o.done - o.sent for o in while_gone) < bound
    recovered = _first_success_after(traffic, moments["back"])
    assert recovered is not None
    assert recovered < 3.0
    assert any(o.status == 204 for o in traffic.outcomes if o.sent > moments["back"])


def test_stopped_postgresql_gives_503s_then_service_again_and_no_half_writes(
    server: LiveServer, pairs: list[Pair], cluster: PrivateCluster
) -> None:
    traffic, moments = asyncio.run(_with_traffic(server, pairs, Outage(cluster, frozen=False)))
    # Refused connections fail at once: no request waits its deadline.
    _check_outage_answers(server, traffic, moments, bound=2.0)
    _check_consistency(server, pairs, traffic)


def test_frozen_postgresql_gives_503s_within_the_deadline_then_service_again(
    server: LiveServer, pairs: list[Pair], cluster: PrivateCluster
) -> None:
    traffic, moments = asyncio.run(_with_traffic(server, pairs, Outage(cluster, frozen=True)))
    _check_outage_answers(server, traffic, moments, bound=REQUEST_TIMEOUT + 1.0)
    _check_consistency(server, pairs, traffic)


def test_serve_waits_for_a_database_that_is_not_up_yet(
    cluster: PrivateCluster, tmp_path: Path
) -> None:
    cluster.stop()
    port = free_port()
    log = tmp_path / "serve.log"
    environment = dict(
        os.environ,
        PLACEMENT_DATABASE_URL=cluster.url("placement"),
        PLACEMENT_DATABASE_WAIT_TIMEOUT="60",
    )
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "placement_api", "serve", "--port", str(port)],
            env=environment, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "Waiting for the database" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        cluster.start()
        url = f"http://127.0.0.1:{port}"
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                response = httpx.get(f"{url}/resource_providers", headers=HEADERS, timeout=2)
                break
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert response.status_code == 200


def test_with_default_limits_a_frozen_database_is_a_503_within_the_documented_bound(
    cluster: PrivateCluster, pairs: list[Pair]
) -> None:
    """Requests under way on a connection to a frozen server, and new ones,
    are answered within ``database_statement_timeout`` + 2 s (12 s)."""
    bound = 12.0
    with live_server(cluster.url("placement")) as default_server:
        url = f"{default_server.url}/resource_providers/{pairs[0].compute}/usages"
        with httpx.Client(headers=HEADERS, timeout=bound + 8) as client:
            assert client.get(url).status_code == 200  # a pooled connection, just used
            cluster.freeze()
            try:
                started = time.monotonic()
                answer = client.get(url)
                took = time.monotonic() - started
            finally:
                cluster.thaw()
    assert answer.status_code == 503, answer.text
    assert took < bound + 1.0, took
