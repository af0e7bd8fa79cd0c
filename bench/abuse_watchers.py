"""Section 2 of the abuse benchmark: thousands of feed watchers (long-polls and
event streams) on two workers while ordinary requests and writes go on, then
streams whose clients never read."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import time
from dataclasses import dataclass, field

import asyncpg
import httpx

from bench.abuse_load import (
    HEADERS,
    Ordinary,
    beside,
    memory_kib,
    ms,
    quantile,
    workers,
)
from bench.lean_http import Connection
from bench.scheduler_bench_infra import PG_ADMIN, Server

# PostgreSQL backends report their table statistics once idle this long (PG 15).
STATS_FLUSH_SECONDS = 11


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
