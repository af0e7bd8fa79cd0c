"""Reads from a standby (``database_read_url``), with read-your-writes.

A write's position is the primary's WAL position once it committed
(``pg_current_wal_lsn()``: past its commit record). A read that names one
is answered from the standby only once the standby has replayed that far,
checked on the very connection the read then uses (replay only moves
forward), waiting at most ``wait`` seconds; otherwise the primary answers.
A standby that cannot be reached does not take reads down either: the
primary answers them. A read waits for the standby at most ``timeout``
seconds (its connection, opened or pinged; the standby's engine pings
every checkout, ``engine.standby_engine_for``), and a standby that failed
a read is left alone for ``retry_interval`` seconds (``StandbyBreaker``):
a frozen standby costs the first read the bound, not every read a
statement timeout. docs/ha.md says what this costs and guarantees.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from contextlib import AbstractAsyncContextManager
from types import TracebackType

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.outage import is_unavailable, server_cancelled
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


class StandbyBreaker:
    """Whether reads try the standby: not for ``interval`` seconds after one
    failed there; then a single read (the probe) tries it, the others keep to
    the primary until it answered, so each trip costs one read the bound and
    logs once. A read admitted before a trip changes nothing when it ends."""

    __slots__ = ("_closed_at", "_interval", "_probing", "tripped")

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._closed_at = 0.0
        self._probing = False
        self.tripped = False

    def admit(self) -> bool:
        """True when this read tries the standby; it then reports ``answered``,
        ``failed`` or (ended before either) ``released``, saying whether it was
        admitted as the probe (``tripped`` when it was admitted)."""
        if not self.tripped:
            return True
        if self._probing or time.monotonic() < self._closed_at:
            return False
        self._probing = True
        return True

    def answered(self, probe: bool) -> None:
        if probe:
            LOG.info("standby answers again: reads go to it")
            self.tripped = self._probing = False

    def failed(self, error: BaseException, probe: bool) -> None:
        if self.tripped and not probe:
            return  # a read of this trip's; the first one logged
        self.tripped, self._probing = True, False
        self._closed_at = time.monotonic() + self._interval
        LOG.warning(
            "standby unavailable, reads go to the primary for %gs: %s",
            self._interval,
            str(error) or type(error).__name__,
        )

    def released(self, probe: bool) -> None:
        if probe:
            self._probing = False


class Replica:
    """The primary's and the standby's session factories, how long a read
    waits for the standby to reach a write's position (``wait``) and for a
    connection there (``timeout``), and the standby's breaker."""

    def __init__(
        self,
        primary: SessionFactory,
        standby: SessionFactory,
        wait: float,
        *,
        timeout: float,
        retry_interval: float,
    ) -> None:
        self.primary = primary
        self.standby = standby
        self.wait = wait
        self.timeout = timeout
        self.breaker = StandbyBreaker(retry_interval)

    def read(self, after: str | None) -> ReplicaRead:
        """A read unit on the standby, or on the primary when the standby has
        not replayed ``after`` within the wait, cannot be reached within the
        timeout, or failed a read less than the retry interval ago."""
        return ReplicaRead(self, after)

    async def position(self) -> str:
        """The primary's WAL position now: past every commit that returned
        (for a write whose own connection did not give it, ``UnitOfWork.written``)."""
        async with UnitOfWork(self.primary, write=False) as session:
            return str(await session.scalar(_WRITTEN))


class ReplicaRead(AbstractAsyncContextManager[AsyncSession]):
    __slots__ = ("_after", "_on_standby", "_probe", "_replica", "_unit")

    def __init__(self, replica: Replica, after: str | None) -> None:
        self._replica = replica
        self._after = after
        self._unit: UnitOfWork | None = None
        self._on_standby = False
        self._probe = False

    async def __aenter__(self) -> AsyncSession:
        replica = self._replica
        self._probe = replica.breaker.tripped
        if self._after != PRIMARY and replica.breaker.admit():
            session = await self._try_standby()
            if session is not None:
                return session
        self._unit = UnitOfWork(replica.primary, write=False)
        return await self._unit.__aenter__()

    async def _try_standby(self) -> AsyncSession | None:
        replica = self._replica
        bound = replica.timeout + (replica.wait if self._after is not None else 0.0)
        try:
            async with asyncio.timeout(bound):
                session = await self._standby_session()
        except Exception as exc:
            if not is_unavailable(exc):
                replica.breaker.released(self._probe)
                raise
            replica.breaker.failed(exc, self._probe)
            return None
        except BaseException:
            replica.breaker.released(self._probe)
            raise
        # Behind the read's position is no failure: the standby answered.
        replica.breaker.answered(self._probe)
        return session

    async def _standby_session(self) -> AsyncSession | None:
        unit = UnitOfWork(self._replica.standby, write=False)
        session = await unit.__aenter__()
        if self._after is None:
            self._unit, self._on_standby = unit, True
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
        self._unit, self._on_standby = unit, True
        return session

    def second_connection(self) -> SecondConnection | None:
        return None if self._unit is None else self._unit.second_connection()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # The standby failing halfway through a read (it answered the ping, then
        # froze or went away): this read fails as on any database, the next go
        # to the primary. A statement the standby cancelled itself was slow work.
        if (
            self._on_standby
            and exc is not None
            and is_unavailable(exc)
            and not server_cancelled(exc)
        ):
            self._replica.breaker.failed(exc, probe=False)
        if self._unit is not None:
            await self._unit.__aexit__(exc_type, exc, traceback)
