"""Infrastructure of the scheduler benchmark: a fresh database and Placement server,
CPU accounting per process, and the database-level check and reset between runs."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.db.models import (
    Allocation,
    Consumer,
    Inventory,
    ResourceClass,
    ResourceProvider,
)

PG_ADMIN = os.environ.get("PLACEMENT_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
Placed = dict[str, dict[str, dict[str, int]]]  # consumer -> provider -> class -> amount


@dataclass(frozen=True)
class Server:
    url: str
    pid: int
    database_url: str
    database_name: str | None  # PostgreSQL only


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _pg_admin(statement: str, *args: Any) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(PG_ADMIN)
    try:
        return list(await connection.fetch(statement, *args))
    finally:
        await connection.close()


@contextmanager
def database(backend: str, scratch: Path) -> Iterator[tuple[str, str | None]]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{scratch / 'bench.sqlite'}", None
        return
    name = f"scheduler_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    try:
        base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
        yield f"{base}/{name}", name
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def placement(backend: str, scratch: Path, workers: int) -> Iterator[Server]:
    with database(backend, scratch) as (database_url, database_name):
        env = dict(os.environ, PLACEMENT_DATABASE_URL=database_url)
        argv = [sys.executable, "-m", "placement_api"]
        subprocess.run([*argv, "db", "upgrade"], env=env, check=True)
        port = free_port()
        log = scratch / f"placement-{backend}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*argv, "serve", "--port", str(port), "--workers", str(workers),
                 "--log-level", "warning"],
                env=env, stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(url, process, log)
            yield Server(url, process.pid, database_url, database_name)
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"placement-api did not start; see {log}")
        try:
            if httpx.get(f"{url}/", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, ppid, ... utime (11), stime (12)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pids: set[int]) -> dict[int, float]:
    seconds = {}
    for pid in pids:
        try:
            fields = _stat(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU between two readings; a process that ended in between is not counted."""
    return sum(end - before.get(pid, 0.0) for pid, end in after.items())


def process_tree(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            parents[int(entry.name)] = int(_stat(int(entry.name))[1])
        except (ValueError, FileNotFoundError, ProcessLookupError):
            continue
    tree = {root}
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    return tree


async def database_pids(server: Server) -> set[int]:
    if server.database_name is None:
        return set()
    rows = await _pg_admin(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1", server.database_name
    )
    return {int(row["pid"]) for row in rows}


async def verify(engine: AsyncEngine, placed: Placed) -> tuple[list[str], list[str]]:
    """Read the truth from the database: inventories over capacity, and wrong
    allocations (``used`` not the sum of its allocations, or a consumer not holding
    exactly what was placed for it, nothing for a consumer not placed)."""
    over_capacity: list[str] = []
    wrong: list[str] = []
    allocated = (
        select(
            Allocation.resource_provider_id.label("rp"),
            Allocation.resource_class_id.label("rc"),
            func.sum(Allocation.used).label("amount"),
        )
        .group_by(Allocation.resource_provider_id, Allocation.resource_class_id)
        .subquery()
    )
    inventories = (
        select(
            ResourceProvider.uuid,
            ResourceClass.name,
            Inventory.total,
            Inventory.reserved,
            Inventory.allocation_ratio,
            Inventory.used,
            allocated.c.amount,
        )
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .outerjoin(
            allocated,
            (allocated.c.rp == Inventory.resource_provider_id)
            & (allocated.c.rc == Inventory.resource_class_id),
        )
    )
    held = (
        select(Consumer.uuid, ResourceProvider.uuid, ResourceClass.name, Allocation.used)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceProvider, ResourceProvider.id == Allocation.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
    )
    async with engine.connect() as connection:
        for rp, rc, total, reserved, ratio, used, amount in await connection.execute(inventories):
            if (amount or 0) > (total - reserved) * ratio:
                over_capacity.append(f"{rp} {rc}: {amount} allocated")
            if (amount or 0) != used:
                wrong.append(f"{rp} {rc}: used {used} != {amount}")
        found: Placed = {}
        for consumer, rp, rc, used in (await connection.execute(held)).all():
            found.setdefault(consumer, {}).setdefault(rp, {})[rc] = used
    for consumer in sorted(found.keys() | placed.keys()):
        if found.get(consumer) != placed.get(consumer):
            wrong.append(f"consumer {consumer}")
    return over_capacity, wrong


async def reset(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(delete(Allocation))
        await connection.execute(delete(Consumer))
        await connection.execute(update(Inventory).values(used=0))
        await connection.execute(
            update(ResourceProvider).values(generation=ResourceProvider.generation + 1)
        )
