"""Reads from a standby (``database_read_url``), with read-your-writes.

A write's position is the primary's WAL position once it committed
(``pg_current_wal_lsn()``: past its commit record). A read that names one
is answered from the standby only once the standby has replayed that far,
checked on the very connection the read then uses (replay only moves
forward), waiting at most ``wait`` seconds; otherwise the primary answers.
A standby that cannot be reached does not take reads down either: the
primary answers them. docs/ha.md says what this costs and guarantees.
"""

from __future__ import annotations

import asyncio
import logging
import re
from contextlib import AbstractAsyncContextManager
from types import TracebackType

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.outage import is_unavailable
from placement_api.db.second_connection import SecondConnection
from placement_api.db.session import SessionFactory, UnitOfWork

LOG = logging.getLogger(__name__)

# A WAL position as PostgreSQL prints it: two hexadecimal halves.
POSITION = re.compile(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}")
# The position an API without a read URL answers writes with: it reads only the
# primary, and learning the WAL position would cost every write a round trip.
# Any API reading it back answers from the primary.
PRIMARY = "primary"
# How often a standby behind a read's position is asked again.
POLL_SECONDS = 0.01

# NULL on a primary (a read URL naming the primary is always current).
_REPLAYED = text(
    "SELECT coalesce(pg_last_wal_replay_lsn() >= CAST(CAST(:position AS text) AS pg_lsn), true)"
)
_WRITTEN = text("SELECT CAST(pg_current_wal_lsn() AS text)")


def is_position(token: str) -> bool:
    return token == PRIMARY or POSITION.fullmatch(token) is not None


class Replica:
    """The primary's and the standby's session factories, and how long a
    read waits for the standby to reach a write's position."""

    def __init__(self, primary: SessionFactory, standby: SessionFactory, wait: float) -> None:
        self.primary = primary
        self.standby = standby
        self.wait = wait

    def read(self, after: str | None) -> ReplicaRead:
        """A read unit on the standby, or on the primary when the standby has
        not replayed ``after`` within the wait (or cannot be reached)."""
        return ReplicaRead(self, after)

    async def position(self) -> str:
        """The primary's WAL position now: past every commit that returned
        (for a write whose own connection did not give it, ``UnitOfWork.written``)."""
        async with UnitOfWork(self.primary, write=False) as session:
            return str(await session.scalar(_WRITTEN))


class ReplicaRead(AbstractAsyncContextManager[AsyncSession]):
    __slots__ = ("_after", "_replica", "_unit")

    def __init__(self, replica: Replica, after: str | None) -> None:
        self._replica = replica
        self._after = after
        self._unit: UnitOfWork | None = None

    async def __aenter__(self) -> AsyncSession:
        if self._after == PRIMARY:
            self._unit = UnitOfWork(self._replica.primary, write=False)
            return await self._unit.__aenter__()
        try:
            session = await self._on_standby()
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            LOG.warning("standby unavailable, reading from the primary: %s", exc)
            session = None
        if session is not None:
            return session
        self._unit = UnitOfWork(self._replica.primary, write=False)
        return await self._unit.__aenter__()

    async def _on_standby(self) -> AsyncSession | None:
        unit = UnitOfWork(self._replica.standby, write=False)
        session = await unit.__aenter__()
        if self._after is None:
            self._unit = unit
            return session
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._replica.wait
        try:
            while not await session.scalar(_REPLAYED, {"position": self._after}):
                if loop.time() >= deadline:
                    await unit.__aexit__(None, None, None)
                    return None
                await asyncio.sleep(POLL_SECONDS)
        except BaseException as exc:
            await unit.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._unit = unit
        return session

    def second_connection(self) -> SecondConnection | None:
        return None if self._unit is None else self._unit.second_connection()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._unit is not None:
            await self._unit.__aexit__(exc_type, exc, traceback)
