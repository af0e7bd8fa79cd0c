"""Many writers against one server: does throughput hold as clients grow?

    python -m bench writers [--seconds 30] [--clients 8,64] [--workers 2]

PostgreSQL, ``--workers`` API processes. For each client count, that many
clients claim for ``--seconds`` (``PUT /allocations/{new consumer}``, VCPU
and memory on one of ``--providers`` providers), then the database is
checked: no provider over capacity, every usage the sum of its allocations,
every consumer holding exactly what its client was told it got. Printed per
run: claims per second, p50/p99 latency, answers by status, CPU per request
of the API and of this load generator (on a small machine they compete),
and the PostgreSQL sessions opened during the run (a pool that churns opens
and closes sessions under load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lean_http import Connection
from bench.scheduler_bench_infra import (
    Placed,
    Server,
    _pg_admin,
    cpu_seconds,
    cpu_used,
    placement,
    process_tree,
    reset,
    verify,
)
from placement_api.db.engine import create_engine

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}
VCPU_PER_PROVIDER = 100_000


@dataclass
class Run:
    clients: int
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    placed: Placed = field(default_factory=dict)


async def _providers(url: str, count: int) -> list[str]:
    async with httpx.AsyncClient(base_url=url, headers=HEADERS) as client:
        uuids = []
        for index in range(count):
            created = await client.post("/resource_providers", json={"name": f"host-{index}"})
            created.raise_for_status()
            provider = created.json()["uuid"]
            inventory = {
                "VCPU": {"total": VCPU_PER_PROVIDER},
                "MEMORY_MB": {"total": VCPU_PER_PROVIDER * 256},
            }
            response = await client.put(
                f"/resource_providers/{provider}/inventories",
                json={"resource_provider_generation": 0, "inventories": inventory},
            )
            response.raise_for_status()
            uuids.append(provider)
    return uuids


async def _client(url: str, providers: list[str], run: Run, until: float) -> None:
    rng = random.Random()
    connection = Connection(url, HEADERS)
    try:
        while time.monotonic() < until:
            consumer, provider = str(uuid.uuid4()), rng.choice(providers)
            resources = {"VCPU": 1, "MEMORY_MB": 256}
            body: dict[str, object] = {
                "allocations": {provider: {"resources": resources}},
                "project_id": "bench",
                "user_id": "bench",
                "consumer_generation": None,
            }
            started = time.perf_counter()
            try:
                status, _ = await connection.request(
                    "PUT", f"/allocations/{consumer}", json.dumps(body).encode()
                )
            except (OSError, asyncio.IncompleteReadError) as exc:
                run.errors[type(exc).__name__] += 1
                await connection.close()
                continue
            run.latencies.append(time.perf_counter() - started)
            run.statuses[status] += 1
            if status == 204:
                run.placed[consumer] = {provider: resources}
    finally:
        await connection.close()


async def _sessions(database: str) -> int:
    rows = await _pg_admin("SELECT sessions FROM pg_stat_database WHERE datname = $1", database)
    return int(rows[0]["sessions"])


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


async def _measure(
    server: Server, providers: list[str], clients: int, seconds: float
) -> tuple[str, bool]:
    """One run's line of the table, and whether the database was right after it."""
    assert server.database_name is not None
    engine = create_engine(server.database_url)
    try:
        await reset(engine)
        run = Run(clients)
        pids = process_tree(server.pid)
        sessions_before = await _sessions(server.database_name)
        cpu_before = cpu_seconds(pids)
        client_before = time.process_time()
        started = time.monotonic()
        until = started + seconds
        await asyncio.gather(*(_client(server.url, providers, run, until) for _ in range(clients)))
        elapsed = time.monotonic() - started
        cpu = cpu_used(cpu_before, cpu_seconds(pids))
        client_cpu = time.process_time() - client_before
        await asyncio.sleep(1.0)  # sessions are counted when their backend reports
        opened = await _sessions(server.database_name) - sessions_before
        over_capacity, wrong = await verify(engine, run.placed)
    finally:
        await engine.dispose()
    answered = sum(run.statuses.values())
    statuses = " ".join(f"{status}:{count}" for status, count in sorted(run.statuses.items()))
    errors = " ".join(f"{name}:{count}" for name, count in run.errors.items()) or "-"
    line = (
        f"{clients:>7} {answered / elapsed:>9.0f} {run.statuses[204] / elapsed:>8.0f} "
        f"{_percentile(run.latencies, 0.5) * 1000:>7.1f} "
        f"{_percentile(run.latencies, 0.99) * 1000:>7.1f} "
        f"{cpu * 1000 / max(answered, 1):>10.2f} {client_cpu * 1000 / max(answered, 1):>10.2f} "
        f"{opened:>8} "
        f"{len(over_capacity):>5} {len(wrong):>5}  {statuses}  errors {errors}"
    )
    return line, not over_capacity and not wrong


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", default="8,64", help="comma-separated client counts")
    parser.add_argument("--workers", type=int, default=2, help="API worker processes")
    parser.add_argument("--providers", type=int, default=50)
    args = parser.parse_args(argv)
    counts = [int(part) for part in args.clients.split(",")]
    with (
        tempfile.TemporaryDirectory(prefix="writers-bench-") as scratch,
        placement("postgresql", Path(scratch), args.workers) as server,
    ):
        providers = asyncio.run(_providers(server.url, args.providers))
        print(
            f"PostgreSQL, {args.workers} API workers, {args.providers} providers of "
            f"{VCPU_PER_PROVIDER} VCPU, {args.seconds:g}s per run"
        )
        print(
            "clients  answers/s  claims/s  p50 ms  p99 ms  API CPU ms  bench CPU ms  "
            "sessions  over  wrong"
        )
        failed = False
        for clients in counts:
            line, right = asyncio.run(_measure(server, providers, clients, args.seconds))
            print(line, flush=True)
            failed = failed or not right
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
