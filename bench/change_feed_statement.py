"""The change feed's own statements, measured alone on PostgreSQL.

    python bench/change_feed_statement.py [--rounds 6] [--transactions 2000]

Concurrent write transactions (each a one-row update, as a claim's, on a
row of its own writer) run without and with the feed's append statement
(``placement_api.domain.changes``): one entry, as a claim for one consumer
records it, and three (the JSON array form); and, to tell the round trip
from the statement's work, with one extra statement that does nothing
(``SELECT 1``). Then one sequencing run indexes what they recorded.
Reported: transactions per second with ``WRITERS`` concurrent writers
(recording writes must not commit one at a time), the database CPU per
transaction (the backends' scheduler time, in microseconds: steadier than
transactions/s on a busy machine), and the sequencing run's wall time and
database CPU per entry. It isolates what the feed adds on the database side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.candidates_servers import drop_database, recreate_database, server_dsn
from placement_api.db import migrations
from placement_api.db.engine import create_engine
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import feed_index
from placement_api.domain.changes import (
    _POSTGRESQL_APPEND,
    _POSTGRESQL_APPEND_ONE,
    recording_session_factory,
)

TRANSACTIONS = 2000
WRITERS = 8
ADMIN_DSN = os.environ.get(
    "PLACEMENT_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)

# What each variant runs after the update, in the same transaction: (statement, arguments).
Extra = tuple[str, tuple[Any, ...]] | None


def _claim_details(provider: str) -> dict[str, Any]:
    """An allocation change's details, as a claim on one provider records them."""
    return {
        "generation": 1,
        "allocations": {provider: {"VCPU": 1}},
        "usages": {provider: {"VCPU": 5}},
        "resource_providers": {provider: 7},
        "resource_classes": ["VCPU"],
    }


def _variants() -> dict[str, Extra]:
    provider = str(uuid.uuid4())
    details = json.dumps(_claim_details(provider), separators=(",", ":"))
    three = json.dumps(
        [
            {
                "ordinal": ordinal,
                "resource": "allocation",
                "action": "created",
                "uuid": str(uuid.uuid4()),
                "details": _claim_details(provider),
            }
            for ordinal in range(3)
        ],
        separators=(",", ":"),
    )
    one = ("allocation", "created", str(uuid.uuid4()), details)
    return {
        "without the feed": None,
        "an empty statement instead (SELECT 1)": ("SELECT 1", ()),
        "with the feed, one entry": (_POSTGRESQL_APPEND_ONE, one),
        "with the feed, three entries": (_POSTGRESQL_APPEND, (three,)),
    }


def _cpu_seconds(pids: set[int]) -> float:
    """The processes' CPU time so far, to the nanosecond (``/proc/<pid>/schedstat``)."""
    return sum(int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) for pid in pids) / 1e9


async def _run(writers: list[asyncpg.Connection], extra: Extra, transactions: int) -> float:
    """Transactions per second of every writer running its share at once."""

    async def share(row: int, writer: asyncpg.Connection) -> None:
        for _ in range(transactions // len(writers)):
            async with writer.transaction():
                await writer.execute("UPDATE work SET v = v + 1 WHERE id = $1", row)
                if extra is not None:
                    await writer.execute(extra[0], *extra[1])

    began = time.perf_counter()
    await asyncio.gather(*(share(row, writer) for row, writer in enumerate(writers)))
    return transactions // len(writers) * len(writers) / (time.perf_counter() - began)


async def _sequencing(factory: SessionFactory) -> tuple[float, float]:
    """Wall and database CPU seconds of one sequencing run."""
    began = time.perf_counter()
    async with unit_of_work(factory, write=True) as session:
        pid = int(await session.scalar(text("SELECT pg_backend_pid()")) or 0)
        cpu_before = _cpu_seconds({pid})
        await feed_index.sequence(session)
    return time.perf_counter() - began, _cpu_seconds({pid}) - cpu_before


async def measure(admin_dsn: str, rounds: int, transactions: int = TRANSACTIONS) -> None:
    database = f"placement_bench_feed_statement_{uuid.uuid4().hex[:8]}"
    await recreate_database(admin_dsn, database)
    dsn = server_dsn(admin_dsn, database)
    url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    variants = _variants()
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    sequencing: list[tuple[float, float]] = []
    engine = create_engine(url)
    try:
        await asyncio.to_thread(migrations.upgrade, url)
        factory = recording_session_factory(engine)
        await _sequencing(factory)  # connects, so that the runs timed do not
        writers = [await asyncpg.connect(dsn) for _ in range(WRITERS)]
        await writers[0].execute("CREATE TABLE work (id int PRIMARY KEY, v int)")
        await writers[0].execute(
            "INSERT INTO work SELECT g, 0 FROM generate_series(0, $1) AS g", WRITERS
        )
        pids = {await writer.fetchval("SELECT pg_backend_pid()") for writer in writers}
        for _ in range(rounds):
            for name, extra in variants.items():
                before = _cpu_seconds(pids)
                rate = await _run(writers, extra, transactions)
                cpu_us = (_cpu_seconds(pids) - before) / transactions * 1e6
                rates[name].append((rate, cpu_us))
            recorded = transactions * 4  # the two feed variants: one entry, then three
            wall, cpu = await _sequencing(factory)
            sequencing.append((wall / recorded * 1e6, cpu / recorded * 1e6))
        for writer in writers:
            await writer.close()
    finally:
        await engine.dispose()
        await drop_database(admin_dsn, database)
    print(
        f"\n| {WRITERS} concurrent writers, {rounds} rounds of {transactions} one-row write "
        "transactions | transactions/s | DB CPU µs per transaction |\n|---|---|---|"
    )
    for name, results in rates.items():
        rate = statistics.median(r for r, _ in results)
        cpu = statistics.median(c for _, c in results)
        print(f"| {name} | {rate:.0f} | {cpu:.0f} |")
    print(
        f"\nsequencing run (indexes a round's {transactions * 4} entries): "
        f"{statistics.median(w for w, _ in sequencing):.1f} µs wall and "
        f"{statistics.median(c for _, c in sequencing):.1f} µs of database CPU per entry"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--transactions", type=int, default=TRANSACTIONS, help="per variant")
    options = parser.parse_args()
    asyncio.run(measure(ADMIN_DSN, options.rounds, options.transactions))


if __name__ == "__main__":
    main()
