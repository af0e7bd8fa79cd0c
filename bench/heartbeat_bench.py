"""What host heartbeats cost: 10,000 hosts reporting every 60 s.

    python -m bench heartbeats [--hosts 10000] [--seconds 10] [--workers 2]

PostgreSQL, ``--workers`` API processes, ``--hosts`` root providers (inserted
in SQL: seeding is not what is measured). Then, each phase printed with the
CPU it cost the API processes and the database backends:

1. first heartbeats: ``--first`` hosts send one (each an INSERT; the other
   hosts' rows are then inserted in SQL);
2. saturation: ``--clients`` concurrent senders for ``--seconds``
   (heartbeats/s the API sustains, CPU per heartbeat), beside the same load
   of ``GET /resource_providers/{uuid}``: the ratio of the two is what a
   heartbeat costs next to the cheapest request, on a machine of any speed;
3. the real load: heartbeats paced at hosts / ``--period`` per second for
   ``--seconds`` (the share of a core the API and PostgreSQL spend on it);
4. the table after phases 2 and 3: updates that were HOT, dead rows, size;
   then phase 2 again at fillfactor 100 (the migration sets 50), to show why;
5. ``GET /heartbeats`` at ``--hosts`` entries: latency and size.

The load generator shares the machine: CPU per heartbeat is the steady
figure, heartbeats/s is a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scheduler_bench_infra import (
    PG_ADMIN,
    Server,
    cpu_seconds,
    cpu_used,
    database_pids,
    placement,
    process_tree,
)

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
BODY = {
    "interval": 60,
    "metrics": {
        "cpu.percent": 37.5,
        "cpu.iowait.percent": 1.2,
        "memory.used": 81234.5,
        "memory.total": 257000.0,
        "memory.percent": 31.6,
        "instances.cpu.percent": 30.1,
    },
}
# PostgreSQL backends report their table statistics when idle this long (PG 15).
STATS_FLUSH_SECONDS = 11


@dataclass(frozen=True)
class Phase:
    label: str
    done: int
    seconds: float
    api_cpu: float
    db_cpu: float
    latencies: list[float]

    def line(self) -> str:
        rate = self.done / self.seconds
        per = 1000 / max(self.done, 1)
        ordered = sorted(self.latencies) or [0.0]
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (
            f"| {self.label} | {self.done} | {rate:.0f}/s | {self.api_cpu * per:.2f} / "
            f"{self.db_cpu * per:.2f} | {100 * self.api_cpu / self.seconds:.0f}% / "
            f"{100 * self.db_cpu / self.seconds:.0f}% | {1000 * statistics.median(ordered):.1f} / "
            f"{1000 * p99:.1f} |"
        )


async def seed(connection: asyncpg.Connection, hosts: int) -> list[str]:
    await connection.execute(
        "INSERT INTO resource_providers (uuid, name, generation, created_at) "
        "SELECT gen_random_uuid()::text, 'host-' || n, 0, now() FROM generate_series(1, $1) n",
        hosts,
    )
    await connection.execute("UPDATE resource_providers SET root_provider_id = id")
    rows = await connection.fetch("SELECT uuid FROM resource_providers ORDER BY id")
    return [row["uuid"] for row in rows]


Send = Callable[[httpx.AsyncClient, str], Awaitable[None]]


async def send(http: httpx.AsyncClient, uuid: str) -> None:
    response = await http.put(f"/resource_providers/{uuid}/heartbeat", json=BODY)
    if response.status_code != 200:
        raise RuntimeError(f"heartbeat refused: {response.status_code} {response.text}")


async def show_provider(http: httpx.AsyncClient, uuid: str) -> None:
    (await http.get(f"/resource_providers/{uuid}")).raise_for_status()


async def seed_heartbeats(connection: asyncpg.Connection) -> None:
    """The row each host's first heartbeat would have made, for hosts that sent none."""
    await connection.execute(
        "INSERT INTO provider_heartbeats "
        "SELECT id, now(), 60, $1::json, now() FROM resource_providers "
        "WHERE id NOT IN (SELECT resource_provider_id FROM provider_heartbeats)",
        json.dumps(BODY["metrics"]),
    )


async def measured(server: Server, label: str, load: Callable[[], Awaitable[Phase]]) -> Phase:
    api_pids = process_tree(server.pid)
    db_pids = await database_pids(server)
    api_before, db_before = cpu_seconds(api_pids), cpu_seconds(db_pids)
    phase = await load()
    db_pids |= await database_pids(server)
    api = cpu_used(api_before, cpu_seconds(api_pids))
    db = cpu_used(db_before, cpu_seconds(db_pids))
    return Phase(label, phase.done, phase.seconds, api, db, phase.latencies)


async def flat_out(
    url: str, uuids: list[str], clients: int, seconds: float | None, request: Send = send
) -> Phase:
    """Each client sends requests back to back: one per host (seconds None), or
    round the hosts until the time is up."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60, limits=limits) as http:
        began = time.monotonic()
        deadline = began + seconds if seconds else None

        async def client(offset: int) -> None:
            turn = offset
            while (deadline is None and turn < len(uuids)) or (
                deadline is not None and time.monotonic() < deadline
            ):
                start = time.monotonic()
                await request(http, uuids[turn % len(uuids)])
                latencies.append(time.monotonic() - start)
                turn += clients

        await asyncio.gather(*(client(offset) for offset in range(clients)))
        return Phase("", len(latencies), time.monotonic() - began, 0, 0, latencies)


async def paced(url: str, uuids: list[str], rate: float, seconds: float) -> Phase:
    """Heartbeats started at ``rate`` per second, as hosts on timers would send them."""
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        began = time.monotonic()
        pending: set[asyncio.Task[None]] = set()

        async def one(uuid: str) -> None:
            start = time.monotonic()
            await send(http, uuid)
            latencies.append(time.monotonic() - start)

        for number in range(int(rate * seconds)):
            await asyncio.sleep(max(began + number / rate - time.monotonic(), 0))
            task = asyncio.create_task(one(uuids[number % len(uuids)]))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
        return Phase("", len(latencies), time.monotonic() - began, 0, 0, latencies)


async def table_state(connection: asyncpg.Connection) -> asyncpg.Record:
    await asyncio.sleep(STATS_FLUSH_SECONDS)
    return await connection.fetchrow(
        "SELECT n_tup_upd, n_tup_hot_upd, n_dead_tup, autovacuum_count, "
        "pg_relation_size('provider_heartbeats') AS heap, "
        "pg_relation_size('pk_provider_heartbeats') AS pk "
        "FROM pg_stat_user_tables WHERE relname = 'provider_heartbeats'"
    )


def table_line(label: str, before: asyncpg.Record, after: asyncpg.Record) -> str:
    updates = after["n_tup_upd"] - before["n_tup_upd"]
    hot = after["n_tup_hot_upd"] - before["n_tup_hot_upd"]
    return (
        f"| {label} | {updates} | {100 * hot / max(updates, 1):.1f}% | {after['n_dead_tup']} | "
        f"{after['autovacuum_count'] - before['autovacuum_count']} | "
        f"{before['heap'] // 1024} -> {after['heap'] // 1024} KiB | "
        f"{before['pk'] // 1024} -> {after['pk'] // 1024} KiB |"
    )


async def list_latency(url: str, requests: int) -> tuple[list[float], int, int]:
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        timings, size, entries = [], 0, 0
        for _ in range(requests):
            start = time.monotonic()
            response = await http.get("/heartbeats")
            timings.append(time.monotonic() - start)
            response.raise_for_status()
            size, entries = len(response.content), len(response.json()["heartbeats"])
        return timings, size, entries


async def run(server: Server, options: argparse.Namespace) -> None:
    base = PG_ADMIN.rsplit("/", 1)[0]
    connection = await asyncpg.connect(f"{base}/{server.database_name}")
    try:
        uuids = await seed(connection, options.hosts)
        rate = options.hosts / options.period
        print(
            f"\n{options.hosts} hosts, PostgreSQL, {options.workers} API workers\n\n"
            "| phase | heartbeats | rate | CPU ms per heartbeat: API / DB | "
            "CPU share of one core: API / DB | latency ms p50 / p99 |\n|---|---|---|---|---|---|"
        )
        first = await measured(
            server,
            f"first heartbeat of {options.first} hosts (INSERT)",
            lambda: flat_out(server.url, uuids[: options.first], options.clients, None),
        )
        print(first.line(), flush=True)
        await seed_heartbeats(connection)
        baseline = await measured(
            server,
            f"GET /resource_providers/{{uuid}}, {options.clients} clients",
            lambda: flat_out(server.url, uuids, options.clients, options.seconds, show_provider),
        )
        print(baseline.line(), flush=True)
        start = await table_state(connection)
        saturated = await measured(
            server,
            f"saturation, {options.clients} clients",
            lambda: flat_out(server.url, uuids, options.clients, options.seconds),
        )
        print(saturated.line(), flush=True)
        after_saturation = await table_state(connection)
        steady = await measured(
            server,
            f"{options.hosts} hosts every {options.period:g} s ({rate:.0f}/s)",
            lambda: paced(server.url, uuids, rate, options.seconds),
        )
        print(steady.line(), flush=True)
        cost = saturated.api_cpu / saturated.done
        print(
            f"\nAPI CPU of a heartbeat / of a GET provider: "
            f"{cost / (baseline.api_cpu / baseline.done):.2f}; at {rate:.0f}/s the API needs "
            f"{rate * cost:.2f} cores at this machine's speed, PostgreSQL "
            f"{rate * saturated.db_cpu / saturated.done:.2f}"
        )
        after_steady = await table_state(connection)
        await connection.execute("ALTER TABLE provider_heartbeats SET (fillfactor = 100)")
        await connection.execute("VACUUM FULL provider_heartbeats")
        packed = await table_state(connection)
        await measured(
            server,
            "saturation, fillfactor 100",
            lambda: flat_out(server.url, uuids, options.clients, options.seconds),
        )
        after_packed = await table_state(connection)
        print(
            "\n| provider_heartbeats | updates | HOT | dead rows | autovacuums | heap | "
            "primary key |\n|---|---|---|---|---|---|---|"
        )
        print(table_line("saturation (fillfactor 50)", start, after_saturation))
        print(table_line(f"{rate:.0f}/s (fillfactor 50)", after_saturation, after_steady))
        print(table_line("saturation (fillfactor 100)", packed, after_packed))
    finally:
        await connection.close()
    timings, size, entries = await list_latency(server.url, options.list_requests)
    ordered = sorted(timings)
    print(
        f"\nGET /heartbeats: {entries} entries, {size / 1024:.0f} KiB, {len(timings)} requests: "
        f"p50 {1000 * statistics.median(ordered):.0f} ms, max {1000 * ordered[-1]:.0f} ms"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--period", type=float, default=60.0, help="each host's interval (s)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of phases 2 and 3")
    parser.add_argument(
        "--first", type=int, default=1_000, help="hosts whose first heartbeat is timed"
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--list-requests", type=int, default=10)
    return parser.parse_args()


def main() -> None:
    options = parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="heartbeat-bench-") as scratch,
        placement("postgresql", Path(scratch), options.workers) as server,
    ):
        asyncio.run(run(server, options))


if __name__ == "__main__":
    main()
