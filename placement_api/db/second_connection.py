"""A second, read-only connection beside a PostgreSQL read's own, so that the
domain can run a read while its request's statements run; the unit of work
that hands it out closes it."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import QueuePool


class SecondConnection:
    """Taken only while the pool can give it at once: a request waiting for a
    second connection while holding its first could deadlock a busy pool.
    It reads in autocommit, as the unit of work's own does."""

    __slots__ = ("_connection", "_engine")

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._connection: AsyncConnection | None = None

    async def get(self) -> AsyncConnection | None:
        """The connection, taken now if the pool has one to spare; else None."""
        if self._connection is None:
            pool = self._engine.sync_engine.pool
            # Fewer checked out than the pool's size: one is idle or can be
            # made, without waiting.
            if not isinstance(pool, QueuePool) or pool.checkedout() >= pool.size():
                return None
            connection = await self._engine.connect()
            self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        return self._connection

    async def close(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            await connection.close()
