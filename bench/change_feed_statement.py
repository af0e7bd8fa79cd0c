"""The change feed's own statements, measured alone on PostgreSQL.

Concurrent write transactions (each a one-row update, as a claim's, on a
row of its own writer) run without and with the feed's append statement
(``placement_api.domain.changes``); then one sequencing run indexes what
they recorded. Reported: transactions per second with ``WRITERS``
concurrent writers (recording writes must not commit one at a time), the
database CPU per transaction, and the sequencing run's wall and database
time per entry. Steadier than whole-API figures on a busy machine, it
isolates what the feed adds on the database side.
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
from placement_api.db.engine import create_engine
from placement_api.db.session import SessionFactory, make_session_factory, unit_of_work
from placement_api.domain import feed_index
from placement_api.domain.changes import _POSTGRESQL_APPEND

TRANSACTIONS = 400
WRITERS = 8

Transaction = Callable[[asyncpg.Connection, int], Awaitable[None]]


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
    entry = {"ordinal": 0, "resource": "allocation", "action": "created", "uuid": consumer}
    return json.dumps([{**entry, "details": details}])


def _variant(record: bool) -> Transaction:
    entry = _claim_entry()

    async def transaction(writer: asyncpg.Connection, row: int) -> None:
        async with writer.transaction():
            await writer.execute("UPDATE work SET v = v + 1 WHERE id = $1", row)
            if record:
                await writer.execute(_POSTGRESQL_APPEND, entry)

    return transaction


async def _run(writers: list[asyncpg.Connection], transaction: Transaction) -> float:
    """Transactions per second of every writer running its share at once."""

    async def share(row: int, writer: asyncpg.Connection) -> None:
        for _ in range(TRANSACTIONS // len(writers)):
            await transaction(writer, row)

    began = time.perf_counter()
    await asyncio.gather(*(share(row, writer) for row, writer in enumerate(writers)))
    return TRANSACTIONS // len(writers) * len(writers) / (time.perf_counter() - began)


async def _sequencing(factory: SessionFactory) -> float:
    """Wall seconds of one sequencing run."""
    began = time.perf_counter()
    async with unit_of_work(factory, write=True) as session:
        await feed_index.sequence(session)
    return time.perf_counter() - began


async def measure(admin_dsn: str, rounds: int) -> None:
    database = f"placement_bench_feed_statement_{uuid.uuid4().hex[:8]}"
    await recreate_database(admin_dsn, database)
    dsn = server_dsn(admin_dsn, database)
    url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    rates: dict[str, list[tuple[float, float]]] = {"without the feed": [], "with the feed": []}
    sequencing: list[float] = []
    engine = create_engine(url)
    try:
        await asyncio.to_thread(migrations.upgrade, url)
        factory = make_session_factory(engine)
        await _sequencing(factory)  # connects, so that the runs timed do not
        writers = [await asyncpg.connect(dsn) for _ in range(WRITERS)]
        await writers[0].execute("CREATE TABLE work (id int PRIMARY KEY, v int)")
        await writers[0].execute(
            "INSERT INTO work SELECT g, 0 FROM generate_series(0, $1) AS g", WRITERS
        )
        pids = {await writer.fetchval("SELECT pg_backend_pid()") for writer in writers}
        for _ in range(rounds):
            for name, record in (("without the feed", False), ("with the feed", True)):
                before = cpu_seconds(pids)
                rate = await _run(writers, _variant(record))
                cpu_ms = cpu_used(before, cpu_seconds(pids)) / TRANSACTIONS * 1000
                rates[name].append((rate, cpu_ms))
            sequencing.append(await _sequencing(factory) / TRANSACTIONS * 1000)
        for writer in writers:
            await writer.close()
    finally:
        await engine.dispose()
        await drop_database(admin_dsn, database)
    print(
        f"\n| {WRITERS} concurrent writers, {rounds} rounds of {TRANSACTIONS} one-row write "
        "transactions | transactions/s | DB CPU ms per transaction |\n|---|---|---|"
    )
    for name, results in rates.items():
        rate = statistics.median(r for r, _ in results)
        cpu = statistics.median(c for _, c in results)
        print(f"| {name} | {rate:.0f} | {cpu:.3f} |")
    print(
        f"\nsequencing run (indexes a round's {TRANSACTIONS} entries): "
        f"{statistics.median(sequencing):.3f} ms wall per entry"
    )
