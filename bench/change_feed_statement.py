"""The change feed's own statement, measured alone on PostgreSQL.

A write transaction (one row update, as a claim's) is run with and without
the feed's append statement (``placement_api.domain.changes``), and with it
but without the NOTIFY, while two connections LISTEN as two API workers'
would. Reported: wall time and the database CPU (the writer's and the
listeners' backends) per transaction. Steadier than whole-API figures on a
busy machine, it isolates what the feed adds on the database side.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

import asyncpg

from bench.candidates_servers import drop_database, recreate_database, server_dsn
from bench.scheduler_bench_infra import cpu_seconds, cpu_used
from placement_api.db import migrations
from placement_api.domain.changes import _POSTGRESQL_APPEND, NOTIFY_CHANNEL

NOTIFY = f"pg_notify('{NOTIFY_CHANNEL}', last_index::text)"
TRANSACTIONS = 300


def _claim_entry() -> str:
    """One allocation change, as a claim on one provider records it."""
    provider, consumer = str(uuid.uuid4()), str(uuid.uuid4())
    details = {
        "generation": 1,
        "allocations": {provider: {"VCPU": 1}},
        "usages": {provider: {"VCPU": 5}},
        "resource_providers": {provider: 7},
        "resource_classes": ["VCPU"],
    }
    entry = {"ordinal": 1, "resource": "allocation", "action": "created", "uuid": consumer}
    return json.dumps([{**entry, "details": details}])


async def _rounds(
    variants: dict[str, Callable[[], Awaitable[None]]], pids: set[int], rounds: int
) -> dict[str, list[tuple[float, float]]]:
    taken: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, transaction in variants.items():
            before, began = cpu_seconds(pids), time.perf_counter()
            for _ in range(TRANSACTIONS):
                await transaction()
            wall = (time.perf_counter() - began) / TRANSACTIONS * 1000
            taken[name].append((wall, cpu_used(before, cpu_seconds(pids)) / TRANSACTIONS * 1000))
    return taken


async def measure(admin_dsn: str, rounds: int) -> None:
    database = f"placement_bench_feed_statement_{uuid.uuid4().hex[:8]}"
    await recreate_database(admin_dsn, database)
    dsn = server_dsn(admin_dsn, database)
    try:
        await asyncio.to_thread(
            migrations.upgrade, dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
        )
        writer = await asyncpg.connect(dsn)
        listeners = [await asyncpg.connect(dsn) for _ in range(2)]
        for listener in listeners:
            await listener.add_listener(NOTIFY_CHANNEL, lambda *_: None)
        await writer.execute("CREATE TABLE work (id int PRIMARY KEY, v int)")
        await writer.execute("INSERT INTO work VALUES (1, 0)")
        entry = _claim_entry()

        def variant(append: str | None) -> Callable[[], Awaitable[None]]:
            async def transaction() -> None:
                async with writer.transaction():
                    await writer.execute("UPDATE work SET v = v + 1 WHERE id = 1")
                    if append is not None:
                        await writer.fetchval(append, 1, entry)

            return transaction

        variants = {
            "without the feed": variant(None),
            "with the feed": variant(_POSTGRESQL_APPEND),
            "with the feed, no NOTIFY": variant(_POSTGRESQL_APPEND.replace(NOTIFY, "1")),
        }
        pids = {await c.fetchval("SELECT pg_backend_pid()") for c in (writer, *listeners)}
        taken = await _rounds(variants, pids, rounds)
        for connection in (writer, *listeners):
            await connection.close()
    finally:
        await drop_database(admin_dsn, database)
    print(f"\n| one-row write transaction, {rounds} x {TRANSACTIONS} | wall ms | DB CPU ms |")
    print("|---|---|---|")
    for name, results in taken.items():
        wall = statistics.median(w for w, _ in results)
        cpu = statistics.median(c for _, c in results)
        print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
