"""The change feed's per-application machinery: waiting readers and pruning.

One ``ChangeFeed`` per application, started and closed by its lifespan:

- ``ChangeSignal`` wakes the requests of this process that wait for news.
  A reader takes the current mark *before* it reads the feed, so a change
  committed between its read and its wait still wakes it.
- On PostgreSQL a dedicated asyncpg connection LISTENs on the channel that
  writers NOTIFY in their own transactions, so a change committed through
  any API worker wakes the readers of every worker. The connection is
  re-established when it drops; readers also re-read every
  ``changes_poll_interval`` seconds, the safety net for a missed wake-up.
- A write of this process announces its commit directly (all SQLite has).
- A background task prunes the feed to ``changes_retained`` entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg
from sqlalchemy.engine import URL

from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes
from placement_api.domain.changes import FeedPage
from placement_api.settings import Settings

LOG = logging.getLogger(__name__)
RECONNECT_DELAY = 1.0


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


class _PostgresListener:
    """LISTEN on the feed's channel over a connection of its own, for as long as it runs."""

    def __init__(self, dsn: str, signal: ChangeSignal) -> None:
        self._dsn = dsn
        self._signal = signal

    def _notified(self, *_: Any) -> None:
        self._signal.announce()

    async def run(self) -> None:
        while True:
            try:
                await self._listen_until_lost()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                LOG.warning("change feed: LISTEN failed (%s); retrying", exc)
            await asyncio.sleep(RECONNECT_DELAY)

    async def _listen_until_lost(self) -> None:
        connection = await asyncpg.connect(self._dsn)
        lost = asyncio.Event()
        connection.add_termination_listener(_setter(lost))
        try:
            await connection.add_listener(changes.NOTIFY_CHANNEL, self._notified)
            # Whatever committed while nobody listened: let the readers look.
            self._signal.announce()
            await lost.wait()
            LOG.warning("change feed: LISTEN connection lost; reconnecting")
        finally:
            connection.terminate()


def _setter(event: asyncio.Event) -> Any:
    return lambda *_: event.set()


def listen_dsn(url: URL) -> str:
    """The asyncpg DSN of an SQLAlchemy ``postgresql+asyncpg://`` URL."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class ChangeFeed:
    def __init__(self, settings: Settings, factory: SessionFactory, url: URL) -> None:
        self.settings = settings
        self.signal = ChangeSignal()
        self._factory = factory
        self._url = url
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        if self._url.get_backend_name() == "postgresql":
            listener = _PostgresListener(listen_dsn(self._url), self.signal)
            self._tasks.append(asyncio.create_task(listener.run(), name="change-feed-listen"))
        self._tasks.append(asyncio.create_task(self._prune_forever(), name="change-feed-prune"))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def prune(self) -> int:
        async with unit_of_work(self._factory, write=True) as session:
            return await changes.prune(session, self.settings.changes_retained)

    async def _prune_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.changes_prune_interval)
            try:
                await self.prune()
            except Exception:
                LOG.exception("change feed: pruning failed; will try again")

    async def _read(self, since: int | None, limit: int) -> FeedPage:
        async with unit_of_work(self._factory, write=False) as session:
            if since is None:
                return FeedPage(await changes.last_index(session), [])
            return await changes.read(session, since, limit)

    async def follow(self, since: int | None, limit: int, wait: float) -> FeedPage:
        """The changes after ``since`` (none when it is None: just the latest
        index). With nothing newer, wait up to ``wait`` seconds (at most
        ``changes_max_wait``) for a change to commit."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(wait, self.settings.changes_max_wait)
        while True:
            mark = self.signal.mark()
            page = await self._read(since, limit)
            remaining = deadline - loop.time()
            if page.changes or remaining <= 0:
                return page
            since = page.index if since is None else since
            await _wait(mark, min(remaining, self.settings.changes_poll_interval))
