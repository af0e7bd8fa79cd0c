"""The change feed's own PostgreSQL connections: ``Listener`` hears every
worker's NOTIFY, ``_Notifier``'s sends this worker's; both reach what the
engine reaches (``db.direct_connect``), outlive any error and log a run of
failures once (``Streak``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import asyncpg

from placement_api.db.outage import is_read_only, is_unavailable
from placement_api.domain import changes

LOG = logging.getLogger("placement_api.services.change_feed")
# Between tries to LISTEN again: a new primary is followed within this.
RECONNECT_DELAY = 0.25


def _setter(event: asyncio.Event) -> Any:
    return lambda *_: event.set()


class Streak:
    """Failures of one background loop in a row: the first is logged as a
    warning, the rest quietly (a standby or a failover fails every try),
    and the first success after them says the loop works again."""

    def __init__(self, what: str) -> None:
        self._what = what
        self.failures = 0

    def failed(self, exc: BaseException) -> None:
        self.failures += 1
        level = logging.WARNING if self.failures == 1 else logging.DEBUG
        kind = type(exc).__name__
        # A database away or read-only is expected; anything else may be a bug: its traceback.
        expected = is_unavailable(exc) or is_read_only(exc)
        LOG.log(
            level,
            "change feed: %s failed (%s: %s); retrying",
            self._what,
            kind,
            exc,
            exc_info=None if expected else exc,
        )

    def succeeded(self) -> None:
        if self.failures:
            LOG.warning("change feed: %s works again after %d failures", self._what, self.failures)
        self.failures = 0


class Listener:
    """LISTEN on the feed's channel over a connection of its own, for as long as it runs."""

    def __init__(self, connect: dict[str, Any], news: asyncio.Event) -> None:
        self._connect = connect
        self._news = news
        self._streak = Streak("LISTEN")
        # Whether notifications are heard now, and how many were (or may have
        # been: a reconnect counts one): a reader that read after the last one
        # knows all that any worker announced.
        self.listening = False
        self.heard = 0

    def _notified(self, *_: Any) -> None:
        self.heard += 1
        self._news.set()

    async def run(self) -> None:
        while True:
            try:
                await self._listen_until_lost()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # Whatever the cause (no host answers, none is the primary yet, a
                # standby refusing LISTEN), the loop lives on: readers poll meanwhile.
                self._streak.failed(exc)
            await asyncio.sleep(RECONNECT_DELAY)

    async def _listen_until_lost(self) -> None:
        connection = await asyncpg.connect(**self._connect)
        lost = asyncio.Event()
        connection.add_termination_listener(_setter(lost))
        try:
            await connection.add_listener(changes.NOTIFY_CHANNEL, self._notified)
            self._streak.succeeded()
            self.listening = True
            # Whatever committed while nobody listened: let the readers look.
            self._notified()
            await lost.wait()
            LOG.warning("change feed: LISTEN connection lost; reconnecting")
        finally:
            self.listening = False
            connection.terminate()


class Notifier:
    """Tells every worker that this one's writes recorded changes: one NOTIFY
    per wake-up at most, and at most one every ``interval`` seconds."""

    def __init__(self, connect: dict[str, Any], interval: float) -> None:
        # Nothing to lose in a crash, so the notification's own commit need not wait for disk.
        self._connect = {
            **connect,
            "server_settings": {
                **connect.get("server_settings", {}),
                "synchronous_commit": "off",
            },
        }
        self._interval = interval
        self.wanted = asyncio.Event()
        self._connection: asyncpg.Connection | None = None
        self._streak = Streak("NOTIFY")

    async def run(self) -> None:
        try:
            while True:
                await self.wanted.wait()
                self.wanted.clear()
                try:
                    await self._notify()
                    self._streak.succeeded()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self._streak.failed(exc)
                    await self._drop()
                    await asyncio.sleep(RECONNECT_DELAY)
                await asyncio.sleep(self._interval)
        finally:
            await self._drop()

    async def _notify(self) -> None:
        if self._connection is None or self._connection.is_closed():
            self._connection = await asyncpg.connect(**self._connect)
        await self._connection.execute("SELECT pg_notify($1, '')", changes.NOTIFY_CHANNEL)

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.terminate()
