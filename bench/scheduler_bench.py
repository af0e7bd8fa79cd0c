"""Scheduler benchmark: K concurrent schedulers placing instances on N hosts.

For every host count a fresh database and Placement server are started and
the hosts created through the API. For every K, K independent schedulers
(each with its own client and its own view of the candidates, as separate
scheduler processes would have) place instances one request at a time, all
at once. Reported: placements per second, p50/p95 decision latency, the claim
conflict rate (claims Placement refused with 409 / claims tried), and a
verification that no provider is over capacity and that every successful
placement holds exactly its allocation. Allocations are deleted between runs.

    python bench/scheduler_bench.py                      # small: a few minutes
    python bench/scheduler_bench.py --hosts 1000,5000 --schedulers 1,4,16 --instances 2000
    python bench/scheduler_bench.py --backend postgresql --json var/bench/scheduler.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx

from scheduler.client import PlacementClient
from scheduler.engine import NoValidHostError, Scheduler
from scheduler.settings import SchedulerSettings
from scheduler.spec import ScheduleRequest

T = TypeVar("T")
A = TypeVar("A")
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
PG_ADMIN = os.environ.get("PLACEMENT_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
FLAVORS = [
    {"VCPU": 1, "MEMORY_MB": 2048, "DISK_GB": 20},
    {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40},
    {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 80},
]


@dataclass
class RunResult:
    backend: str
    hosts: int
    schedulers: int
    requested: int
    placed: int = 0
    no_valid_host: int = 0
    seconds: float = 0.0
    placements_per_second: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    claims: int = 0
    conflicts: int = 0
    conflict_rate: float = 0.0
    over_capacity: list[str] = field(default_factory=list)
    wrong_allocations: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.over_capacity and not self.wrong_allocations


@dataclass
class _Worker:
    latencies: list[float] = field(default_factory=list)
    placed: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    refused: int = 0
    claims: int = 0
    conflicts: int = 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _database(backend: str, scratch: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{scratch / 'bench.sqlite'}"
        return
    name = f"scheduler_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    try:
        base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
        yield f"{base}/{name}"
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _pg_admin(statement: str) -> None:
    connection = await asyncpg.connect(PG_ADMIN)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextmanager
def _placement(database_url: str, log: Path) -> Iterator[str]:
    env = dict(os.environ, PLACEMENT_DATABASE_URL=database_url)
    subprocess.run([sys.executable, "-m", "placement_api", "db", "upgrade"], env=env, check=True)
    port = _free_port()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "placement_api", "serve", "--port", str(port),
             "--log-level", "warning"],
            env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"placement-api did not start; see {log}")
            try:
                if httpx.get(f"{url}/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def _bounded(
    each: Callable[[A], Awaitable[T]], items: Iterable[A], parallel: int = 16
) -> list[T]:
    """``each`` over ``items``, at most ``parallel`` at a time, results in order."""
    limit = asyncio.Semaphore(parallel)

    async def one(item: A) -> T:
        async with limit:
            return await each(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


async def _create_hosts(http: httpx.AsyncClient, count: int, rng: random.Random) -> list[str]:
    async def create(index: int) -> str:
        response = await http.post("/resource_providers", json={"name": f"bench-{index:05d}"})
        response.raise_for_status()
        rp = str(response.json()["uuid"])
        inventories = {
            "VCPU": {"total": rng.choice((16, 32, 64)), "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": rng.choice((65536, 131072, 262144)), "reserved": 2048},
            "DISK_GB": {"total": rng.choice((500, 1000, 2000)), "reserved": 20},
        }
        body = {"resource_provider_generation": 0, "inventories": inventories}
        (await http.put(f"/resource_providers/{rp}/inventories", json=body)).raise_for_status()
        return rp

    return await _bounded(create, range(count))


async def _scheduler_loop(scheduler: Scheduler, requests: list[ScheduleRequest]) -> _Worker:
    worker = _Worker()
    for spec in requests:
        started = time.perf_counter()
        try:
            result = await scheduler.schedule(spec)
        except NoValidHostError as exc:
            worker.latencies.append(time.perf_counter() - started)
            worker.refused += 1
            attempts = [a for i in exc.explanation.instances for a in i.claims]
        else:
            worker.latencies.append(time.perf_counter() - started)
            for selection in result.selections:
                worker.placed[selection.consumer_uuid] = {
                    rp: dict(a.resources) for rp, a in selection.allocations.items()
                }
            attempts = [a for i in result.explanation.instances for a in i.claims]
        worker.claims += len(attempts)
        worker.conflicts += sum(1 for a in attempts if a.outcome == "conflict")
    return worker


async def _run(url: str, hosts: int, k: int, instances: int, rng: random.Random) -> RunResult:
    requests = [
        ScheduleRequest.model_validate({"resources": rng.choice(FLAVORS)}) for _ in range(instances)
    ]
    settings = SchedulerSettings(api_url=url, host_subset_size=3, claim_attempts=5)
    clients = [PlacementClient(url, "admin") for _ in range(k)]
    schedulers = [
        Scheduler(settings, client, rng=random.Random(i)) for i, client in enumerate(clients)
    ]
    started = time.perf_counter()
    workers = await asyncio.gather(
        *(_scheduler_loop(s, requests[i::k]) for i, s in enumerate(schedulers))
    )
    seconds = time.perf_counter() - started
    for client in clients:
        await client.aclose()
    latencies = sorted(x for w in workers for x in w.latencies)
    result = RunResult(backend="", hosts=hosts, schedulers=k, requested=instances, seconds=seconds)
    result.placed = sum(len(w.placed) for w in workers)
    result.no_valid_host = sum(w.refused for w in workers)
    result.placements_per_second = round(result.placed / seconds, 1)
    result.latency_p50_ms = round(statistics.median(latencies) * 1000, 1)
    result.latency_p95_ms = round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1)
    result.claims = sum(w.claims for w in workers)
    result.conflicts = sum(w.conflicts for w in workers)
    result.conflict_rate = round(result.conflicts / max(1, result.claims), 4)
    placed = {c: a for w in workers for c, a in w.placed.items()}
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        await _verify(http, placed, result)
        await _bounded(lambda c: http.delete(f"/allocations/{c}"), placed)
    return result


async def _verify(
    http: httpx.AsyncClient, placed: dict[str, dict[str, dict[str, int]]], result: RunResult
) -> None:
    providers = (await http.get("/resource_providers")).json()["resource_providers"]

    async def check_provider(rp: str) -> None:
        inventories = (await http.get(f"/resource_providers/{rp}/inventories")).json()
        usages = (await http.get(f"/resource_providers/{rp}/usages")).json()["usages"]
        for rc, inv in inventories["inventories"].items():
            if usages.get(rc, 0) > (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]:
                result.over_capacity.append(f"{rp} {rc}")

    async def check_consumer(consumer: str) -> None:
        held = (await http.get(f"/allocations/{consumer}")).json()["allocations"]
        if {rp: entry["resources"] for rp, entry in held.items()} != placed[consumer]:
            result.wrong_allocations.append(consumer)

    await _bounded(check_provider, [str(p["uuid"]) for p in providers])
    await _bounded(check_consumer, placed)


def _bench_hosts(backend: str, hosts: int, ks: list[int], instances: int) -> list[RunResult]:
    rng = random.Random(hosts)
    results = []
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scheduler-bench-")))
        database_url = stack.enter_context(_database(backend, scratch))
        url = stack.enter_context(_placement(database_url, scratch / "placement.log"))

        async def setup() -> None:
            async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
                await _create_hosts(http, hosts, rng)

        started = time.perf_counter()
        asyncio.run(setup())
        print(f"  {hosts} hosts created in {time.perf_counter() - started:.1f}s")
        for k in ks:
            result = asyncio.run(_run(url, hosts, k, instances, rng))
            result.backend = backend
            _print(result)
            results.append(result)
    return results


def _print(result: RunResult) -> None:
    status = "ok" if result.verified else "FAILED VERIFICATION"
    print(
        f"  K={result.schedulers:<3} placed {result.placed}/{result.requested} "
        f"({result.no_valid_host} no valid host) in {result.seconds:.1f}s: "
        f"{result.placements_per_second}/s, p50 {result.latency_p50_ms} ms, "
        f"p95 {result.latency_p95_ms} ms, conflicts {result.conflicts}/{result.claims} "
        f"({result.conflict_rate:.1%}); verification {status}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--hosts", default="200", help="Comma-separated host counts.")
    parser.add_argument("--schedulers", default="1,4", help="Comma-separated K values.")
    parser.add_argument("--instances", type=int, default=300, help="Instances per run.")
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.schedulers.split(",")]
    results: list[RunResult] = []
    for hosts in (int(h) for h in args.hosts.split(",")):
        print(f"scheduler bench: {hosts} hosts, backend {args.backend}")
        results.extend(_bench_hosts(args.backend, hosts, ks, args.instances))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        rows: list[dict[str, Any]] = [asdict(r) | {"verified": r.verified} for r in results]
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(r.verified for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
