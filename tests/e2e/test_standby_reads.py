"""Reads from a hot standby (docs/ha.md): a private primary and a streaming
standby, with three servers on them:

- ``primary``: the API on the primary alone;
- ``standby_only``: an API whose PLACEMENT_DATABASE_URL reaches only the
  standby: it starts, answers every read route as the primary does, and
  every write with a 503 and Retry-After;
- ``split``: the API on the primary with PLACEMENT_DATABASE_READ_URL on the
  standby, which replays each commit ``APPLY_DELAY`` late: a read sending
  back a write's X-Placement-Read-After is never stale, one without it is;
  the scheduler's reads after its claims send it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import httpx
import pytest

from placement_api.db import migrations
from placement_client import PlacementClient
from scheduler.placement.client import AllocationRequest, NewClaim, SchedulerPlacement
from tests.support.databases import BACKENDS
from tests.support.pg_cluster import (
    PrivateCluster,
    private_cluster,
    server_binaries,
    streaming_standby,
)
from tests.support.server import LiveServer, live_server

pytestmark = [
    pytest.mark.skipif(
        server_binaries() is None or "postgresql" not in BACKENDS,
        reason="needs PostgreSQL server binaries to start a private cluster",
    ),
    pytest.mark.xdist_group("high_availability"),
]

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
READ_AFTER = "X-Placement-Read-After"
APPLY_DELAY = "300ms"
ROUNDS = 500
CONTROL_ROUNDS = 100
CONCURRENCY = 25


@dataclass(frozen=True)
class Pair:
    primary: PrivateCluster
    standby: PrivateCluster


async def _create_database(cluster: PrivateCluster) -> None:
    admin = await asyncpg.connect(cluster.url().replace("+asyncpg", ""))
    try:
        await admin.execute("CREATE DATABASE placement")
    finally:
        await admin.close()


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with private_cluster() as primary:
        asyncio.run(_create_database(primary))
        migrations.upgrade(primary.url("placement"))
        with streaming_standby(primary, f"recovery_min_apply_delay={APPLY_DELAY}") as standby:
            yield Pair(primary, standby)


@pytest.fixture(scope="module")
def primary(pair: Pair) -> Iterator[LiveServer]:
    with live_server(pair.primary.url("placement")) as running:
        yield running


@pytest.fixture(scope="module")
def standby_only(pair: Pair, primary: LiveServer) -> Iterator[LiveServer]:
    # After ``primary``: its start-up synced the standard names the standby replays.
    _wait_for_replay(pair)
    with live_server(pair.standby.url("placement"), PLACEMENT_RETRY_AFTER="3") as running:
        yield running


@pytest.fixture(scope="module")
def split(pair: Pair) -> Iterator[LiveServer]:
    with live_server(
        pair.primary.url("placement"),
        PLACEMENT_DATABASE_READ_URL=pair.standby.url("placement"),
        # Longer than the standby's delay: reads with a position wait for it there.
        PLACEMENT_DATABASE_READ_AFTER_WAIT="2",
    ) as running:
        yield running


def _wait_for_replay(pair: Pair, timeout: float = 30) -> None:
    async def replayed() -> None:
        primary = await asyncpg.connect(pair.primary.url().replace("+asyncpg", ""))
        standby = await asyncpg.connect(pair.standby.url().replace("+asyncpg", ""))
        try:
            target = await primary.fetchval("SELECT pg_current_wal_lsn()")
            deadline = time.monotonic() + timeout
            while not await standby.fetchval(
                "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target
            ):
                assert time.monotonic() < deadline, "the standby did not catch up"
                await asyncio.sleep(0.05)
        finally:
            await primary.close()
            await standby.close()

    asyncio.run(replayed())


def _seed(client: httpx.Client) -> tuple[str, str]:
    """A provider with inventory, a trait, an aggregate and an allocation."""
    provider = client.post("/resource_providers", json={"name": f"host-{uuid.uuid4().hex[:8]}"})
    assert provider.status_code == 200, provider.text
    rp = provider.json()["uuid"]
    inventories = {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 4096}}
    put = client.put(
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": 0, "inventories": inventories},
    )
    assert put.status_code == 200, put.text
    assert client.put("/traits/CUSTOM_STANDBY_READS").status_code in (201, 204)
    traits = client.put(
        f"/resource_providers/{rp}/traits",
        json={"resource_provider_generation": 1, "traits": ["CUSTOM_STANDBY_READS"]},
    )
    assert traits.status_code == 200, traits.text
    aggregates = client.put(
        f"/resource_providers/{rp}/aggregates",
        json={"resource_provider_generation": 2, "aggregates": [str(uuid.uuid4())]},
    )
    assert aggregates.status_code == 200, aggregates.text
    consumer = str(uuid.uuid4())
    claim = client.put(
        f"/allocations/{consumer}",
        json={
            "allocations": {rp: {"resources": {"VCPU": 2, "MEMORY_MB": 512}}},
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
            "project_id": "demo",
            "user_id": "alice",
        },
    )
    assert claim.status_code == 204, claim.text
    return rp, consumer


def _read_routes(rp: str, consumer: str) -> list[str]:
    return [
        "/resource_providers",
        f"/resource_providers/{rp}",
        f"/resource_providers/{rp}/inventories",
        f"/resource_providers/{rp}/inventories/VCPU",
        f"/resource_providers/{rp}/usages",
        f"/resource_providers/{rp}/allocations",
        f"/resource_providers/{rp}/traits",
        f"/resource_providers/{rp}/aggregates",
        f"/allocations/{consumer}",
        "/usages?project_id=demo",
        "/traits?name=startswith:CUSTOM_",
        "/resource_classes",
        "/resource_classes/VCPU",
        "/allocation_candidates?resources=VCPU:1,MEMORY_MB:128",
        "/capacity",
        "/heartbeats",
    ]


def _timeless(body: dict[str, object]) -> dict[str, object]:
    """The body without the moment it was answered (the heartbeats' ``now``)."""
    return {key: value for key, value in body.items() if key != "now"}


def test_an_api_on_the_standby_reads_as_the_primary_and_refuses_writes_with_503(
    pair: Pair, primary: LiveServer, standby_only: LiveServer
) -> None:
    with (
        httpx.Client(base_url=primary.url, headers=HEADERS, timeout=30) as on_primary,
        httpx.Client(base_url=standby_only.url, headers=HEADERS, timeout=30) as on_standby,
    ):
        rp, consumer = _seed(on_primary)
        _wait_for_replay(pair)
        for route in _read_routes(rp, consumer):
            expected, found = on_primary.get(route), on_standby.get(route)
            assert expected.status_code == 200, (route, expected.text)
            assert (found.status_code, _timeless(found.json())) == (
                200,
                _timeless(expected.json()),
            ), route
        writes = [
            on_standby.post("/resource_providers", json={"name": "refused"}),
            on_standby.put("/traits/CUSTOM_REFUSED"),
            on_standby.delete(f"/allocations/{consumer}"),
            on_standby.put(
                f"/resource_providers/{rp}/inventories",
                json={"resource_provider_generation": 4, "inventories": {}},
            ),
        ]
        for refused in writes:
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "3"
            assert refused.json()["errors"][0]["status"] == 503
        # The standby's feed serves what the primary sequenced, without sequencing itself.
        sequenced = on_primary.get("/changes").json()
        _wait_for_replay(pair)
        assert on_standby.get("/changes").json() == sequenced
        since = sequenced["index"] - 3
        page = on_standby.get(f"/changes?since={since}").json()
        assert page == on_primary.get(f"/changes?since={since}").json()
        assert [c["index"] for c in page["changes"]] == [since + 1, since + 2, since + 3]
    time.sleep(1.5)
    # No loop fails over and over in the background, and nothing was a 500.
    log = standby_only.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert log.count("failed") <= 2, log[-3000:]


async def _stale_reads(server: LiveServer, rounds: int, *, send_token: bool) -> int:
    """Create a provider, read it back at once: how many reads missed it."""
    stale = 0

    async def one(client: httpx.AsyncClient) -> None:
        nonlocal stale
        created = await client.post(
            "/resource_providers", json={"name": f"ryw-{uuid.uuid4().hex[:12]}"}
        )
        assert created.status_code == 200, created.text
        token = created.headers[READ_AFTER]
        headers = {READ_AFTER: token} if send_token else {}
        found = await client.get(f"/resource_providers/{created.json()['uuid']}", headers=headers)
        assert found.status_code in (200, 404), server.log_text()[-3000:]
        stale += found.status_code == 404

    async with httpx.AsyncClient(base_url=server.url, headers=HEADERS, timeout=30) as client:
        for _ in range(rounds // CONCURRENCY):
            await asyncio.gather(*(one(client) for _ in range(CONCURRENCY)))
    return stale


def test_reads_with_a_writes_position_are_never_stale_and_without_it_they_can_be(
    split: LiveServer,
) -> None:
    assert asyncio.run(_stale_reads(split, ROUNDS, send_token=True)) == 0
    # The control: the standby replays APPLY_DELAY late, so a read sent at once misses.
    assert asyncio.run(_stale_reads(split, CONTROL_ROUNDS, send_token=False)) > 0


def test_a_malformed_position_is_a_400(split: LiveServer) -> None:
    with httpx.Client(base_url=split.url, headers=HEADERS, timeout=30) as client:
        answer = client.get("/resource_providers", headers={READ_AFTER: "yesterday"})
    assert answer.status_code == 400
    assert READ_AFTER in answer.json()["errors"][0]["detail"]


def test_reads_go_to_the_primary_while_the_standby_is_down(pair: Pair, split: LiveServer) -> None:
    with httpx.Client(base_url=split.url, headers=HEADERS, timeout=30) as client:
        created = client.post("/resource_providers", json={"name": f"down-{uuid.uuid4().hex[:8]}"})
        assert created.status_code == 200, created.text
        pair.standby.stop()
        try:
            for headers in ({}, {READ_AFTER: created.headers[READ_AFTER]}):
                found = client.get(f"/resource_providers/{created.json()['uuid']}", headers=headers)
                assert found.status_code == 200, found.text
        finally:
            pair.standby.start()


# A frozen standby's cost: what a read may wait for it, and how long reads then keep away.
READ_TIMEOUT = 0.5
RETRY_INTERVAL = 3.0


@pytest.fixture(scope="module")
def guarded(pair: Pair) -> Iterator[LiveServer]:
    with live_server(
        pair.primary.url("placement"),
        PLACEMENT_DATABASE_READ_URL=pair.standby.url("placement"),
        PLACEMENT_DATABASE_READ_TIMEOUT=str(READ_TIMEOUT),
        PLACEMENT_DATABASE_READ_RETRY_INTERVAL=str(RETRY_INTERVAL),
    ) as running:
        yield running


def _fresh_read(client: httpx.Client) -> tuple[int, float]:
    """Create a provider and read it back at once, without its position: the
    standby (APPLY_DELAY late) misses it, the primary has it. The read's status
    and how long it took."""
    created = client.post("/resource_providers", json={"name": f"frz-{uuid.uuid4().hex[:12]}"})
    assert created.status_code == 200, created.text
    started = time.monotonic()
    found = client.get(f"/resource_providers/{created.json()['uuid']}")
    assert found.status_code in (200, 404), found.text
    return found.status_code, time.monotonic() - started


def test_a_frozen_standby_costs_one_read_the_bound_then_reads_go_to_the_primary(
    pair: Pair, guarded: LiveServer
) -> None:
    with httpx.Client(base_url=guarded.url, headers=HEADERS, timeout=60) as client:
        # The standby answers: some fresh read misses what it has not replayed yet.
        assert 404 in [_fresh_read(client)[0] for _ in range(5)]
        pair.standby.freeze()
        try:
            reads = [_fresh_read(client) for _ in range(10)]
            tripped_at = time.monotonic()
        finally:
            pair.standby.thaw()
        # Each answered by the primary; the first paid at most the bound, the others nothing.
        assert [status for status, _ in reads] == [200] * 10, reads
        first, *others = [seconds for _, seconds in reads]
        assert first < READ_TIMEOUT + 1.0, reads
        assert max(others) < READ_TIMEOUT / 2, reads
        # Within the interval the thawed standby is left alone...
        assert [_fresh_read(client)[0] for _ in range(5)] == [200] * 5
        assert time.monotonic() - tripped_at < RETRY_INTERVAL
        # ...after it, reads go back to it.
        time.sleep(RETRY_INTERVAL - (time.monotonic() - tripped_at) + 0.2)
        assert 404 in [_fresh_read(client)[0] for _ in range(5)]
        # A read carrying a position is bounded too (plus the replay wait, 0.2 s).
        created = client.post("/resource_providers", json={"name": f"frz-{uuid.uuid4().hex[:8]}"})
        pair.standby.freeze()
        try:
            started = time.monotonic()
            found = client.get(
                f"/resource_providers/{created.json()['uuid']}",
                headers={READ_AFTER: created.headers[READ_AFTER]},
            )
            took = time.monotonic() - started
        finally:
            pair.standby.thaw()
        assert found.status_code == 200, found.text
        assert took < READ_TIMEOUT + 0.2 + 1.0, took
    time.sleep(0.5)
    log = guarded.log_text()
    # One line per trip, not per read.
    assert log.count("standby unavailable") == 2, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


async def _scheduler_rounds(server: LiveServer, rp: str, rounds: int) -> list[tuple[int, int]]:
    """Claims one VCPU at a time through the scheduler's client; after each, the
    usage its figures and its candidates read show."""
    placement = SchedulerPlacement(PlacementClient.with_token(server.url, "admin"))
    request = AllocationRequest.model_validate({"allocations": {rp: {"resources": {"VCPU": 1}}}})
    seen = []
    try:
        for _ in range(rounds):
            claim = NewClaim(str(uuid.uuid4()), request, "demo", "alice")
            assert (await placement.claim(claim, consumer_type="INSTANCE")).claimed
            figures = await placement.provider_figures(rp)
            answer = await placement.allocation_candidates(
                [("resources", "VCPU:1"), ("in_tree", rp)]
            )
            seen.append((figures["VCPU"][1], answer.provider_summaries[rp].resources["VCPU"].used))
    finally:
        await placement.aclose()
    return seen


def test_the_schedulers_reads_after_its_claims_include_them(split: LiveServer) -> None:
    with httpx.Client(base_url=split.url, headers=HEADERS, timeout=30) as client:
        rp, _ = _seed(client)
    rounds = 5
    seen = asyncio.run(_scheduler_rounds(split, rp, rounds))
    assert seen == [(2 + n, 2 + n) for n in range(1, rounds + 1)]  # _seed's claim holds 2
