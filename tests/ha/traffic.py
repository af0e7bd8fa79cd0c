"""A claim load, a change-feed follower and the checks after a failover, for
the Patroni tests: every acknowledged claim kept, no provider over
capacity, usage equal to the sum of allocations, and a feed that is exact
or whose follower knows it is not."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
CAPACITY = 100  # VCPU per provider: the load fills them, so capacity is tested


@dataclass
class Claims:
    acknowledged: list[str] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    # (sent, status, Retry-After) of every 503.
    unavailable: list[tuple[float, str | None]] = field(default_factory=list)
    transport_errors: int = 0
    running: bool = True


def create_providers(client: httpx.Client, count: int) -> list[str]:
    found = []
    for _ in range(count):
        created = client.post("/resource_providers", json={"name": f"ha-{uuid.uuid4().hex[:10]}"})
        assert created.status_code == 200, created.text
        rp = created.json()["uuid"]
        put = client.put(
            f"/resource_providers/{rp}/inventories",
            json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": CAPACITY}}},
        )
        assert put.status_code == 200, put.text
        found.append(rp)
    return found


async def claim_forever(url: str, providers: list[str], claims: Claims, workers: int) -> None:
    """``workers`` clients claiming 1 VCPU for a new consumer each, in a loop."""
    rng = random.Random(26)

    async def one_client(client: httpx.AsyncClient) -> None:
        while claims.running:
            consumer = str(uuid.uuid4())
            body = {
                "allocations": {rng.choice(providers): {"resources": {"VCPU": 1}}},
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
                "project_id": "ha",
                "user_id": "ha",
            }
            try:
                answer = await client.put(f"/allocations/{consumer}", json=body)
            except httpx.TransportError:
                claims.transport_errors += 1
                await asyncio.sleep(0.05)
                continue
            claims.statuses[answer.status_code] = claims.statuses.get(answer.status_code, 0) + 1
            if answer.status_code == 204:
                claims.acknowledged.append(consumer)
            elif answer.status_code == 503:
                claims.unavailable.append((time.monotonic(), answer.headers.get("retry-after")))
                await asyncio.sleep(0.05)

    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=30) as client:
        await asyncio.gather(*(one_client(client) for _ in range(workers)))


@dataclass
class Follower:
    """Follows ``GET /changes`` as a client should: a 410 or a new epoch means
    "re-read"; it counts those and keeps what it read since the last one."""

    url: str
    # A slow follower reads small pages with a pause between: behind the head.
    page: int = 1000
    pause: float = 0.0
    entries: dict[int, dict[str, Any]] = field(default_factory=dict)
    since: int | None = None
    epoch: str | None = None
    resyncs: list[str] = field(default_factory=list)
    running: bool = True
    # (index, epoch) of every entry read, across resyncs.
    seen: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)

    async def run(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, headers=HEADERS, timeout=30) as client:
            while self.running:
                try:
                    await self._step(client)
                except httpx.TransportError:
                    await asyncio.sleep(0.1)

    async def _step(self, client: httpx.AsyncClient) -> None:
        if self.since is None:
            head = await client.get("/changes")
            if head.status_code != 200:
                await asyncio.sleep(0.1)
                return
            self.since, self.epoch = head.json()["index"], head.json()["epoch"]
            return
        await asyncio.sleep(self.pause)
        page = await client.get(f"/changes?since={self.since}&wait=2&limit={self.page}")
        if page.status_code == 410:
            self._resync("410")
            return
        if page.status_code != 200:
            await asyncio.sleep(0.1)
            return
        body = page.json()
        if body["epoch"] != self.epoch:
            self._resync(f"epoch {self.epoch} -> {body['epoch']}")
            return
        for change in body["changes"]:
            assert change["index"] == self.since + 1, (change["index"], self.since)
            self.entries[change["index"]] = change
            self.seen.append((change["index"], body["epoch"], change))
            self.since = change["index"]

    def _resync(self, why: str) -> None:
        self.resyncs.append(why)
        self.since = None
        self.epoch = None


# Reads sent with this are answered from the primary (``web/read_after.py``).
FROM_PRIMARY = {**HEADERS, "X-Placement-Read-After": "primary"}


def settled_state(url: str, providers: list[str]) -> dict[str, tuple[int, int]]:
    """(usage, sum of allocations) of VCPU per provider, as the API has them now."""
    state = {}
    with httpx.Client(base_url=url, headers=FROM_PRIMARY, timeout=30) as client:
        for rp in providers:
            usage = client.get(f"/resource_providers/{rp}/usages").json()["usages"].get("VCPU", 0)
            allocations = client.get(f"/resource_providers/{rp}/allocations").json()
            total = sum(a["resources"].get("VCPU", 0) for a in allocations["allocations"].values())
            state[rp] = (usage, total)
    return state


def missing_claims(url: str, consumers: list[str]) -> list[str]:
    """Acknowledged claims whose allocations are gone, read from the primary:
    a standby may still be replaying them."""
    missing = []
    with httpx.Client(base_url=url, headers=FROM_PRIMARY, timeout=30) as client:
        for consumer in consumers:
            found = client.get(f"/allocations/{consumer}").json()["allocations"]
            if not found:
                missing.append(consumer)
    return missing


def whole_feed(url: str, since: int) -> tuple[str, dict[int, dict[str, Any]]]:
    """The feed after ``since`` as the API has it now, checked gap-free."""
    entries: dict[int, dict[str, Any]] = {}
    with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as client:
        epoch = ""
        while True:
            body = client.get(f"/changes?since={since}&limit=10000").json()
            epoch = body["epoch"]
            for change in body["changes"]:
                assert change["index"] == since + 1, "the feed has a gap"
                entries[change["index"]] = change
                since = change["index"]
            if since >= body["index"]:
                return epoch, entries


def wait_for_writes(url: str, timeout: float = 60) -> float:
    """Seconds until a write succeeds again."""
    began = time.monotonic()
    with httpx.Client(base_url=url, headers=HEADERS, timeout=10) as client:
        while time.monotonic() - began < timeout:
            try:
                answer = client.post(
                    "/resource_providers", json={"name": f"probe-{uuid.uuid4().hex[:10]}"}
                )
                if answer.status_code == 200:
                    return time.monotonic() - began
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise AssertionError(f"no write succeeded within {timeout}s")


def wake_latency(url: str) -> float:
    """Seconds from a write to the wake-up of a reader waiting on the feed:
    well under the poll interval only when LISTEN/NOTIFY work."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as client:
        head = client.get("/changes").json()["index"]

    async def measure() -> float:
        async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=30) as client:
            waiting = asyncio.ensure_future(client.get(f"/changes?since={head}&wait=20"))
            await asyncio.sleep(0.3)
            written = time.monotonic()
            answer = await client.post(
                "/resource_providers", json={"name": f"wake-{uuid.uuid4().hex[:8]}"}
            )
            assert answer.status_code == 200, answer.text
            await waiting
            return time.monotonic() - written

    return asyncio.run(measure())
