"""The claims benchmark's load: what each client sends (a ``Workload``), and one
block of concurrent clients against one server, tallied (``run_block``)."""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from bench.lean_http import Connection
from bench.scheduler_bench_infra import cpu_seconds, cpu_used

# One claim: what the flavor of a small instance takes from one host.
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes | None = None


def _consumer(provider: str) -> dict[str, object]:
    return {
        "allocations": {provider: {"resources": FLAVOR}},
        "project_id": "bench",
        "user_id": "bench",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }


class Workload:
    """Requests of one kind; ``claims`` is how many claims a 204 made (0: a read)."""

    expected = 200
    claims = 0

    def next(self, rng: random.Random) -> Request:
        raise NotImplementedError


@dataclass
class PutClaims(Workload):
    """``PUT /allocations/{new consumer}``: one claim on a random provider."""

    providers: list[str]
    expected = 204
    claims = 1

    def next(self, rng: random.Random) -> Request:
        body = json.dumps(_consumer(rng.choice(self.providers))).encode()
        return Request("PUT", f"/allocations/{uuid.uuid4()}", body)


@dataclass
class PostClaims(Workload):
    """``POST /allocations``: ``per_request`` new consumers, each on a random provider."""

    providers: list[str]
    per_request: int = 50
    expected = 204

    @property
    def claims(self) -> int:  # type: ignore[override]
        return self.per_request

    def next(self, rng: random.Random) -> Request:
        body = {
            str(uuid.uuid4()): _consumer(rng.choice(self.providers))
            for _ in range(self.per_request)
        }
        return Request("POST", "/allocations", json.dumps(body).encode())


@dataclass
class Reads(Workload):
    """A GET of one of ``paths``, chosen at random."""

    paths: list[str]

    def next(self, rng: random.Random) -> Request:
        return Request("GET", rng.choice(self.paths))


@dataclass
class Tally:
    """What one server answered over its blocks of one section."""

    requests: int = 0
    claims: int = 0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    elapsed: float = 0.0
    server_cpu: float = 0.0
    database_cpu: float = 0.0
    bench_cpu: float = 0.0

    def per_second(self, claims: bool) -> float:
        return (self.claims if claims else self.requests) / self.elapsed if self.elapsed else 0.0

    def percentile_ms(self, fraction: float) -> float:
        if len(self.latencies) < 2:
            return 1000 * (self.latencies[0] if self.latencies else 0.0)
        return (
            1000
            * statistics.quantiles(self.latencies, n=100, method="inclusive")[
                round(fraction * 100) - 1
            ]
        )

    def cpu_ms(self, cpu: float, claims: bool) -> float:
        done = self.claims if claims else self.requests
        return 1000 * cpu / done if done else 0.0


async def _client(
    connection: Connection, work: Workload, tally: Tally, until: float, seed: int
) -> None:
    rng = random.Random(seed)
    while time.monotonic() < until:
        request = work.next(rng)
        started = time.perf_counter()
        try:
            status, _ = await connection.request(request.method, request.path, request.body)
        except (OSError, asyncio.IncompleteReadError) as exc:
            tally.errors[type(exc).__name__] += 1
            continue
        tally.latencies.append(time.perf_counter() - started)
        tally.requests += 1
        tally.statuses[status] += 1
        if status == work.expected:
            tally.claims += work.claims


async def warm_up(connections: list[Connection], work: Workload) -> None:
    """One request per connection, not counted: connections, pools and caches ready."""
    rng = random.Random()

    async def one(connection: Connection) -> None:
        request = work.next(rng)
        await connection.request(request.method, request.path, request.body)

    await asyncio.gather(*(one(connection) for connection in connections))


async def run_block(
    connections: list[Connection],
    work: Workload,
    seconds: float,
    pids: set[int],
    tally: Tally,
    database_pids: set[int] | None = None,
) -> None:
    """Every connection a client, for ``seconds``; added to ``tally`` with the
    CPU of the server's processes (``pids``), of its PostgreSQL sessions
    (``database_pids``) and of this process."""
    server_before, bench_before = cpu_seconds(pids), time.process_time()
    database_before = cpu_seconds(database_pids or set())
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(
        *(_client(c, work, tally, until, random.getrandbits(32)) for c in connections)
    )
    tally.elapsed += time.monotonic() - started
    tally.server_cpu += cpu_used(server_before, cpu_seconds(pids))
    tally.database_cpu += cpu_used(database_before, cpu_seconds(database_pids or set()))
    tally.bench_cpu += time.process_time() - bench_before
