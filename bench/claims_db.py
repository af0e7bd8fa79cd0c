"""The claims benchmark's database side, for our schema and upstream's: empty
the allocations before a section, count the PostgreSQL sessions a server
opened, and check the result after it."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

# Per (provider, class): the sum of its allocations against its capacity.
_SUMS = """
SELECT i.total, i.reserved, i.allocation_ratio, {used} AS used, coalesce(a.amount, 0) AS amount
FROM inventories i LEFT JOIN (
    SELECT resource_provider_id, resource_class_id, sum(used) AS amount
    FROM allocations GROUP BY 1, 2
) a ON a.resource_provider_id = i.resource_provider_id
   AND a.resource_class_id = i.resource_class_id
"""


@dataclass(frozen=True)
class Check:
    """What the database holds after a section."""

    over_capacity: int  # (provider, class) pairs allocated past capacity
    usage_mismatch: int | None  # pairs whose ``used`` is not their allocations' sum (ours)
    consumers: int  # consumers holding allocations
    allocation_rows: int

    def right(self, consumers: int, rows_each: int) -> bool:
        return (
            self.over_capacity == 0
            and not self.usage_mismatch
            and self.consumers == consumers
            and self.allocation_rows == consumers * rows_each
        )

    def describe(self) -> str:
        if self.usage_mismatch is None:
            usage = "usage = sum of allocations (upstream computes usage from them)"
        elif self.usage_mismatch == 0:
            usage = "usage = sum of allocations"
        else:
            usage = f"usage != sum of allocations on {self.usage_mismatch}"
        return f"over capacity: {self.over_capacity}, {usage}, consumers {self.consumers}"


async def reset(dsn: str, *, ours: bool) -> None:
    """Remove every allocation and consumer (ours also zeroes ``used``)."""
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            await connection.execute("DELETE FROM allocations")
            await connection.execute("DELETE FROM consumers")
            if ours:
                await connection.execute("UPDATE inventories SET used = 0")
        await connection.execute("VACUUM ANALYZE allocations, consumers, inventories")
    finally:
        await connection.close()


async def check(dsn: str, *, ours: bool) -> Check:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(_SUMS.format(used="i.used" if ours else "NULL::int"))
        consumers = await connection.fetchval("SELECT count(DISTINCT consumer_id) FROM allocations")
        allocation_rows = await connection.fetchval("SELECT count(*) FROM allocations")
    finally:
        await connection.close()
    over = sum(
        1
        for row in rows
        if row["amount"] > (row["total"] - row["reserved"]) * row["allocation_ratio"]
    )
    mismatch = sum(1 for row in rows if row["used"] != row["amount"]) if ours else None
    return Check(over, mismatch, int(consumers), int(allocation_rows))


async def sessions(admin_dsn: str, database: str) -> int:
    """PostgreSQL sessions opened on ``database`` so far (PostgreSQL 14+)."""
    connection = await asyncpg.connect(admin_dsn)
    try:
        found = await connection.fetchval(
            "SELECT sessions FROM pg_stat_database WHERE datname = $1", database
        )
    finally:
        await connection.close()
    return int(found or 0)


async def backend_pids(admin_dsn: str, database: str) -> set[int]:
    """The PostgreSQL processes of the sessions open on ``database`` (the
    server's pool), to count their CPU; this host's only."""
    connection = await asyncpg.connect(admin_dsn)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1", database
        )
    finally:
        await connection.close()
    return {int(row["pid"]) for row in rows}
