"""What a hostile or careless client can make the API spend (issue #30).

    python -m bench abuse            # the figures of docs/performance-abuse.md
    python -m bench abuse --quick    # fewer watchers and streams: under 2 minutes

PostgreSQL. Two sections, each printed as a table with its goals:

1. candidates abuse (one worker, so every request shares it): a host of 16
   children and G granular groups any child can serve, ``group_policy=none``
   and no ``limit`` (16**G combinations), for G = 5, 6 and 8, while clients
   send ordinary requests to the same worker. Goals: the answer stops at
   ``max_allocation_candidates``; the worker's peak memory grows by at most
   256 MB; ordinary requests keep a p99 under 1 s.
2. watchers (two workers): long-polls (``GET /changes?wait=60``, each
   re-sent as soon as it is answered) and event streams, while clients send
   ordinary GETs and one write a second is made. Goals: an ordinary GET's
   p99 under 200 ms; every write delivered to every watcher within 2 s;
   reads of the ``changes`` table per write the same with few watchers as
   with many. Then streams whose clients never read, while writes go on:
   what each costs the workers (goal: at most 64 KB).

The load generator shares the machine with the server and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import asyncpg
import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lean_http import Connection
from bench.scheduler_bench_infra import PG_ADMIN, Server, placement, process_tree

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
CHILDREN = 16
# PostgreSQL backends report their table statistics once idle this long (PG 15).
STATS_FLUSH_SECONDS = 11
MB = 1024 * 1024
T = TypeVar("T")


def quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.0f}"


# --- process memory ---------------------------------------------------------------------


def workers(server: Server) -> list[int]:
    """The processes that serve requests: the server itself with one worker,
    else its spawned children."""
    tree = process_tree(server.pid) - {server.pid}
    spawned = [pid for pid in tree if b"spawn_main" in _cmdline(pid)]
    return spawned or [server.pid]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def memory_kib(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1])
    raise LookupError(field_name)


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


# --- ordinary requests beside the load -----------------------------------------------------


@dataclass
class Ordinary:
    """Clients sending ordinary requests until stopped; their latencies."""

    url: str
    path: str
    clients: int
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    running: bool = True

    async def run(self) -> None:
        await asyncio.gather(*(self._client() for _ in range(self.clients)))

    async def _client(self) -> None:
        connection = Connection(self.url, HEADERS)
        try:
            while self.running:
                started = time.perf_counter()
                try:
                    status, _ = await connection.request("GET", self.path)
                except (OSError, asyncio.IncompleteReadError):
                    status = 0
                if status != 200:
                    self.errors += 1
                self.latencies.append(time.perf_counter() - started)
                await asyncio.sleep(0.01)
        finally:
            await connection.close()


async def beside(ordinary: Ordinary, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` while ``ordinary``'s clients send their requests."""
    clients = asyncio.ensure_future(ordinary.run())
    await asyncio.sleep(0.5)
    try:
        return await work()
    finally:
        ordinary.running = False
        await clients


# --- section 1: candidates ----------------------------------------------------------------


async def wide_host(http: httpx.AsyncClient) -> str:
    await http.put("/resource_classes/CUSTOM_UNIT")
    host = (await http.post("/resource_providers", json={"name": "wide-host"})).json()["uuid"]
    for index in range(CHILDREN):
        child = await http.post(
            "/resource_providers", json={"name": f"child-{index}", "parent_provider_uuid": host}
        )
        uuid = child.json()["uuid"]
        inventory = {
            "resource_provider_generation": 0,
            "inventories": {"CUSTOM_UNIT": {"total": 8}},
        }
        response = await http.put(f"/resource_providers/{uuid}/inventories", json=inventory)
        assert response.status_code == 200, response.text
    return str(host)


async def candidates_section(server: Server, options: argparse.Namespace) -> None:
    async with httpx.AsyncClient(base_url=server.url, headers=HEADERS, timeout=300) as http:
        host = await wide_host(http)
        (worker,) = workers(server)
        print(
            "\n### Candidates abuse (PostgreSQL, one worker, 16 children, no limit)\n\n"
            "| G | combinations | status | candidates | seconds | MB | worker peak growth MB "
            "| ordinary GET p50 / p99 / max ms |\n|---|---|---|---|---|---|---|---|"
        )
        for groups in options.groups:
            asked = "&".join(f"resources{g}=CUSTOM_UNIT:1" for g in range(1, groups + 1))
            path = f"/allocation_candidates?{asked}&group_policy=none"
            ordinary = Ordinary(server.url, f"/resource_providers/{host}", options.clients)
            reset_peak(worker)
            before = memory_kib(worker, "VmRSS")

            async def abuse(path: str = path) -> tuple[httpx.Response, float]:
                started = time.perf_counter()
                response = await http.get(path)
                return response, time.perf_counter() - started

            response, seconds = await beside(ordinary, abuse)
            growth = (memory_kib(worker, "VmHWM") - before) / 1024
            found = (
                len(response.json()["allocation_requests"]) if response.status_code == 200 else "-"
            )
            lat = ordinary.latencies
            print(
                f"| {groups} | {CHILDREN**groups:,} | {response.status_code} | {found} | "
                f"{seconds:.2f} | {len(response.content) / MB:.1f} | {growth:.0f} | "
                f"{ms(statistics.median(lat))} / {ms(quantile(lat, 0.99))} / {ms(max(lat))} |",
                flush=True,
            )


# --- section 2: watchers ------------------------------------------------------------------


@dataclass
class Watchers:
    """Long-polls that re-ask as soon as answered, and event streams; when
    each saw each change (by the change's uuid)."""

    url: str
    long_polls: int
    streams: int
    since: int
    seen: dict[str, list[float]] = field(default_factory=dict)
    refused: int = 0
    running: bool = True
    connections: list[asyncio.StreamWriter] = field(default_factory=list)

    def saw(self, body: bytes) -> None:
        now = time.perf_counter()
        for line in body.split(b"\n"):
            if b'"uuid"' in line:
                for change in _changes(line):
                    self.seen.setdefault(change, []).append(now)

    async def long_poll(self) -> None:
        connection = Connection(self.url, HEADERS)
        since = self.since
        while self.running:
            try:
                status, body = await connection.request("GET", f"/changes?since={since}&wait=60")
            except (OSError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.5)
                continue
            if status != 200:
                self.refused += 1
                await asyncio.sleep(1)
                continue
            page = json.loads(body)
            if page["changes"]:
                self.saw(body)
                since = page["changes"][-1]["index"]
        await connection.close()

    async def stream(self) -> None:
        reader, writer = await asyncio.open_connection(*_host_port(self.url))
        self.connections.append(writer)
        head = "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        writer.write(
            f"GET /changes?since={self.since} HTTP/1.1\r\nhost: bench\r\n{head}"
            "accept: text/event-stream\r\n\r\n".encode()
        )
        try:
            while self.running and (chunk := await reader.read(65536)):
                if b"event: change" in chunk:
                    self.saw(chunk)
        except OSError:
            pass

    async def waiting(self, count: int) -> None:
        """Give the watchers time to connect and settle."""
        await asyncio.sleep(min(10.0, 1.0 + count / 1000))


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.rsplit("//", 1)[1].split(":")
    return host, int(port)


def _changes(line: bytes) -> list[str]:
    text = line.decode(errors="replace")
    found = []
    for part in text.split('"uuid":"')[1:]:
        found.append(part.split('"', 1)[0])
    return found


async def feed_index(http: httpx.AsyncClient) -> int:
    return int((await http.get("/changes")).json()["index"])


async def changes_reads(connection: asyncpg.Connection) -> int:
    """Scans of the changes table so far (as PostgreSQL's statistics last reported)."""
    row = await connection.fetchrow(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS n "
        "FROM pg_stat_user_tables WHERE relname = 'changes'"
    )
    return int(row["n"])


@dataclass(frozen=True)
class WatchResult:
    label: str
    watchers: int
    writes: int
    delivery: list[float]
    missed: int
    reads_per_write: float
    ordinary: list[float]
    refused: int


async def watch_phase(
    server: Server,
    connection: asyncpg.Connection,
    label: str,
    long_polls: int,
    streams: int,
    options: argparse.Namespace,
) -> WatchResult:
    async with httpx.AsyncClient(base_url=server.url, headers=HEADERS, timeout=30) as http:
        watchers = Watchers(server.url, long_polls, streams, await feed_index(http))
        tasks = [asyncio.ensure_future(watchers.long_poll()) for _ in range(long_polls)]
        tasks += [asyncio.ensure_future(watchers.stream()) for _ in range(streams)]
        await watchers.waiting(long_polls + streams)
        await asyncio.sleep(STATS_FLUSH_SECONDS)
        reads_before = await changes_reads(connection)
        ordinary = Ordinary(server.url, "/resource_providers?name=none", options.clients)

        async def writes() -> list[tuple[str, float]]:
            made = []
            for index in range(options.writes):
                sent = time.perf_counter()
                created = await http.post("/resource_providers", json={"name": f"{label}-{index}"})
                made.append((created.json()["uuid"], sent))
                await asyncio.sleep(1.0)
            return made

        made = await beside(ordinary, writes)
        await asyncio.sleep(STATS_FLUSH_SECONDS)
        reads = await changes_reads(connection) - reads_before
        watchers.running = False
        for writer in watchers.connections:
            writer.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    delivery, missed = [], 0
    for uuid, sent in made:
        arrivals = watchers.seen.get(uuid, [])
        missed += long_polls + streams - len(arrivals)
        delivery += [arrival - sent for arrival in arrivals]
    return WatchResult(
        label,
        long_polls + streams,
        options.writes,
        delivery,
        missed,
        reads / options.writes,
        ordinary.latencies,
        watchers.refused,
    )


async def stalled_phase(server: Server, streams: int, writes: int) -> tuple[float, int]:
    """Streams whose clients never read, while ``writes`` changes are made: the
    workers' memory growth per stream (KB), and how many were dropped."""
    host, port = _host_port(server.url)
    sockets = []
    head = "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
    for _ in range(streams):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((host, port))
        sock.sendall(
            f"GET /changes HTTP/1.1\r\nhost: bench\r\n{head}"
            "accept: text/event-stream\r\n\r\n".encode()
        )
        sockets.append(sock)
    await asyncio.sleep(2)
    pids = workers(server)
    before = sum(memory_kib(pid, "VmRSS") for pid in pids)
    name = "x" * 180
    async with httpx.AsyncClient(base_url=server.url, headers=HEADERS, timeout=30) as http:
        for index in range(writes):
            await http.post("/resource_providers", json={"name": f"{name}-{index}"})
    await asyncio.sleep(2)
    after = sum(memory_kib(pid, "VmRSS") for pid in pids)
    for sock in sockets:
        sock.close()
    return (after - before) / streams, writes


def print_watch(results: list[WatchResult]) -> None:
    print(
        "\n### Change feed watchers (PostgreSQL, two workers)\n\n"
        "| watchers | writes | delivered p50 / p99 / max ms | missed | reads of `changes` "
        "per write | ordinary GET p50 / p99 ms | refused |\n|---|---|---|---|---|---|---|"
    )
    for r in results:
        print(
            f"| {r.label} | {r.writes} | {ms(statistics.median(r.delivery))} / "
            f"{ms(quantile(r.delivery, 0.99))} / {ms(max(r.delivery))} | {r.missed} | "
            f"{r.reads_per_write:.1f} | {ms(statistics.median(r.ordinary))} / "
            f"{ms(quantile(r.ordinary, 0.99))} | {r.refused} |",
            flush=True,
        )


async def watchers_section(server: Server, options: argparse.Namespace) -> None:
    base = PG_ADMIN.rsplit("/", 1)[0]
    connection = await asyncpg.connect(f"{base}/{server.database_name}")
    try:
        results = [
            await watch_phase(server, connection, "10 long-polls", 10, 0, options),
            await watch_phase(
                server,
                connection,
                f"{options.long_polls:,} long-polls + {options.streams:,} streams",
                options.long_polls,
                options.streams,
                options,
            ),
        ]
    finally:
        await connection.close()
    print_watch(results)
    per_stream, writes = await stalled_phase(server, options.stalled, options.stalled_writes)
    print(
        f"\n{options.stalled} event streams whose clients never read, {writes} changes "
        f"(about 250 bytes each) sent to each: the workers grew by {per_stream:.0f} KB "
        "per stream."
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer watchers: under 2 minutes")
    parser.add_argument("--only", choices=("candidates", "watchers"), help="one section")
    parser.add_argument("--groups", type=lambda s: [int(g) for g in s.split(",")], default=None)
    parser.add_argument("--clients", type=int, default=4, help="ordinary clients")
    parser.add_argument("--long-polls", type=int, default=None)
    parser.add_argument("--streams", type=int, default=None)
    parser.add_argument("--writes", type=int, default=None)
    parser.add_argument("--stalled", type=int, default=None)
    parser.add_argument("--stalled-writes", type=int, default=None)
    options = parser.parse_args()
    quick = options.quick
    defaults = {
        "groups": [5, 6, 8],
        "long_polls": 1000 if quick else 5000,
        "streams": 200 if quick else 1000,
        "writes": 2 if quick else 5,
        "stalled": 100 if quick else 300,
        "stalled_writes": 300 if quick else 1000,
    }
    for name, value in defaults.items():
        if getattr(options, name) is None:
            setattr(options, name, value)
    return options


def main() -> None:
    options = parse_args()
    with tempfile.TemporaryDirectory(prefix="abuse-bench-") as scratch:
        if options.only in (None, "candidates"):
            with placement("postgresql", Path(scratch), 1) as server:
                asyncio.run(candidates_section(server, options))
        if options.only in (None, "watchers"):
            with placement("postgresql", Path(scratch), 2) as server:
                asyncio.run(watchers_section(server, options))


if __name__ == "__main__":
    main()
