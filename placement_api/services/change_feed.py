"""The change feed's per-application machinery: waking readers, sequencing, pruning.

One ``ChangeFeed`` per application, started and closed by its lifespan:
``ChangeSignal`` wakes this process's waiting readers, ``_Notifier`` and
``Listener`` carry PostgreSQL's notifications between workers, and a
background task sequences and prunes. docs/changes.md, "How it works", says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg
from sqlalchemy.engine import URL

from placement_api.db.direct_connect import connect_arguments
from placement_api.db.outage import StandbyMemory, is_read_only, is_unavailable
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes, feed_index
from placement_api.domain.feed_index import FeedHead, FeedPage
from placement_api.settings import Settings

LOG = logging.getLogger(__name__)
# Between tries to LISTEN again: a new primary is followed within this.
RECONNECT_DELAY = 0.25


class ChangeSignal:
    """An event replaced at every announcement: waiting on a mark returns
    once anything is announced after the mark was taken."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def mark(self) -> asyncio.Event:
        return self._event

    def announce(self) -> None:
        fired, self._event = self._event, asyncio.Event()
        fired.set()


async def _wait(mark: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await mark.wait()


def _setter(event: asyncio.Event) -> Any:
    return lambda *_: event.set()


class _Streak:
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
        self._streak = _Streak("LISTEN")

    def _notified(self, *_: Any) -> None:
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
            # Whatever committed while nobody listened: let the readers look.
            self._news.set()
            await lost.wait()
            LOG.warning("change feed: LISTEN connection lost; reconnecting")
        finally:
            connection.terminate()


class _Notifier:
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
        self._streak = _Streak("NOTIFY")

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


class ChangeFeed:
    def __init__(self, settings: Settings, factory: SessionFactory, url: URL) -> None:
        self.settings = settings
        self.signal = ChangeSignal()
        self._factory = factory
        self._url = url
        self._postgresql = url.get_backend_name() == "postgresql"
        self._news = asyncio.Event()
        self._notifier: _Notifier | None = None
        self._waiting = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._standby = StandbyMemory()

    async def start(self) -> None:
        if self._postgresql:
            connect = connect_arguments(self._url, timeout=self.settings.database_connect_timeout)
            self._notifier = _Notifier(connect, self.settings.changes_notify_interval)
            self._start(Listener(connect, self._news).run(), "change-feed-listen")
            self._start(self._notifier.run(), "change-feed-notify")
            self._start(self._sequence_on_news(), "change-feed-sequence")
        self._start(self._prune_forever(), "change-feed-prune")

    def _start(self, work: Any, name: str) -> None:
        self._tasks.append(asyncio.create_task(work, name=name))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def committed(self) -> None:
        """A write of this process committed changes: wake whoever follows the feed."""
        if self._notifier is not None:
            self._notifier.wanted.set()
        else:
            self.signal.announce()

    async def _sequence(self) -> FeedHead:
        async with unit_of_work(self._factory, write=True) as session:
            return await feed_index.sequence(session)

    async def _sequence_on_news(self) -> None:
        # One run for all of this worker's readers, and none while nobody waits.
        streak = _Streak("sequencing")
        while True:
            await self._news.wait()
            self._news.clear()
            if not self._waiting or self._standby.now():
                continue
            try:
                await self._sequence()
                streak.succeeded()
            except Exception as exc:
                self._standby.learn(exc)
                streak.failed(exc)
            self.signal.announce()

    async def prune(self) -> int:
        async with unit_of_work(self._factory, write=True) as session:
            return await feed_index.prune(session, self.settings.changes_retained)

    async def _prune_forever(self) -> None:
        streak = _Streak("pruning")
        while True:
            await asyncio.sleep(self.settings.changes_prune_interval)
            if self._standby.now():
                continue
            try:
                await self.prune()
                streak.succeeded()
            except Exception as exc:
                self._standby.learn(exc)
                streak.failed(exc)

    async def _sequenced_head(self) -> FeedHead | None:
        """Sequence what committed since the last run; None on a read-only
        database (a standby), whose entries are indexed by its primary."""
        if not self._postgresql or self._standby.now():
            return None
        try:
            return await self._sequence()
        except Exception as exc:
            if not self._standby.learn(exc):
                raise
            return None

    async def _read(self, since: int | None, limit: int, *, sequence: bool) -> FeedPage:
        if sequence:
            head = await self._sequenced_head()
            if head is not None and since is None:
                return FeedPage(head.index, [], head.epoch)
        async with unit_of_work(self._factory, write=False) as session:
            if since is None:
                top = await feed_index.head(session)
                return FeedPage(top.index, [], top.epoch)
            return await feed_index.read(session, since, limit)

    async def follow(self, since: int | None, limit: int, wait: float) -> FeedPage:
        """The changes after ``since`` (none when it is None: just the latest
        index). With nothing newer, wait up to ``wait`` seconds (at most
        ``changes_max_wait``) for a change to commit."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(wait, self.settings.changes_max_wait)
        woken = False
        self._waiting += 1
        try:
            while True:
                mark = self.signal.mark()
                # After a wake-up this worker has just sequenced; otherwise sequence first.
                page = await self._read(since, limit, sequence=not woken)
                remaining = deadline - loop.time()
                if page.changes or remaining <= 0:
                    return page
                since = page.index if since is None else since
                await _wait(mark, min(remaining, self.settings.changes_poll_interval))
                woken = mark.is_set()
        finally:
            self._waiting -= 1
