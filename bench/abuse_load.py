"""What both sections of the abuse benchmark share: clients sending ordinary
requests beside the load, the workers' memory, latencies as milliseconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bench.lean_http import Connection
from bench.scheduler_bench_infra import Server, process_tree

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
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
