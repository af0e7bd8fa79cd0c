"""The change feed's per-application machinery: reading, waking readers, pruning.

One ``ChangeFeed`` per application, started and closed by its lifespan: its
one reader keeps the feed's tail (``feed_tail``) current, sequencing first
on a PostgreSQL primary; ``ChangeSignal`` wakes this process's waiting
readers, who are served from the tail; ``Notifier`` and ``Listener``
carry PostgreSQL's notifications between workers; a background task
prunes. docs/changes.md, "How it works", says why.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from sqlalchemy.engine import URL

from placement_api import errors
from placement_api.db.direct_connect import connect_arguments
from placement_api.db.outage import StandbyMemory
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import feed_index
from placement_api.domain.feed_index import FeedHead, FeedPage
from placement_api.services.feed_connections import Listener, Notifier, Streak
from placement_api.services.feed_tail import FeedTail
from placement_api.settings import Settings

# Changes read per statement while the reader catches up.
READ_BATCH = 1000


class ChangeSignal:
    """Wakes this worker's waiting readers at every announcement: waiting on
    a mark returns once anything is announced after the mark was taken.

    Thousands may wait: they are woken ``WAKE_BATCH`` per turn of the event
    loop, so the worker's other requests run between batches instead of
    queueing behind every answer.
    """

    WAKE_BATCH = 32

    def __init__(self) -> None:
        self.generation = 0
        # Insertion-ordered: woken first come, first served.
        self._waiters: dict[asyncio.Future[None], None] = {}

    def mark(self) -> int:
        return self.generation

    async def wait(self, mark: int, seconds: float) -> None:
        """Until an announcement after ``mark``, or ``seconds``."""
        if self.generation != mark:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[waiter] = None
        try:
            async with asyncio.timeout(seconds):
                await waiter
        except TimeoutError:
            pass
        finally:
            self._waiters.pop(waiter, None)

    def announce(self) -> None:
        self.generation += 1
        waiters, self._waiters = list(self._waiters), {}
        self._wake(waiters, 0)

    def _wake(self, waiters: list[asyncio.Future[None]], start: int) -> None:
        end = start + self.WAKE_BATCH
        for waiter in waiters[start:end]:
            if not waiter.done():
                waiter.set_result(None)
        if end < len(waiters):
            asyncio.get_running_loop().call_soon(self._wake, waiters, end)


class Slots:
    """A count of things under way, up to ``most``."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.taken = 0

    def take(self) -> bool:
        if self.taken >= self.most:
            return False
        self.taken += 1
        return True

    def give_back(self) -> None:
        self.taken -= 1


class ChangeFeed:
    """The feed as this worker serves it: one reader keeps ``tail`` current
    (one database read per refresh, however many clients wait) and wakes
    the waiting clients, who are served from it."""

    def __init__(self, settings: Settings, factory: SessionFactory, url: URL) -> None:
        self.settings = settings
        self.signal = ChangeSignal()
        # No more than the feed retains: an older reader gets its 410 from the database.
        self.tail = FeedTail(min(settings.changes_cache_size, settings.changes_retained))
        # Long-polls and event streams under way in this worker.
        self.long_polls = Slots(settings.changes_max_waiters)
        self.streams = Slots(settings.changes_max_streams)
        self._factory = factory
        self._url = url
        self._postgresql = url.get_backend_name() == "postgresql"
        self._news = asyncio.Event()
        self._notifier: Notifier | None = None
        self._listener: Listener | None = None
        # This worker's commits; with what the listener heard, what the tail
        # may miss: it misses nothing once a refresh began after both.
        self._committed = 0
        self._read_through: tuple[int, int] | None = None
        # A refresh is wanted; the callers waiting for the next one to end.
        self._wanted = asyncio.Event()
        self._asking: list[asyncio.Future[None]] = []
        self._waiting = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._standby = StandbyMemory()

    async def start(self) -> None:
        if self._postgresql:
            connect = connect_arguments(self._url, timeout=self.settings.database_connect_timeout)
            self._notifier = Notifier(connect, self.settings.changes_notify_interval)
            self._listener = Listener(connect, self._news)
            self._start(self._listener.run(), "change-feed-listen")
            self._start(self._notifier.run(), "change-feed-notify")
            self._start(self._refresh_on_news(), "change-feed-news")
        self._start(self._read_forever(), "change-feed-read")
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
        self._committed += 1
        if self._notifier is not None:
            self._notifier.wanted.set()
        elif self._waiting:
            self._wanted.set()

    async def _sequence(self) -> FeedHead:
        async with unit_of_work(self._factory, write=True) as session:
            return await feed_index.sequence(session)

    async def _refresh_on_news(self) -> None:
        # Another worker's (or this one's) writes: worth a read while clients wait.
        while True:
            await self._news.wait()
            self._news.clear()
            if self._waiting:
                self._wanted.set()

    async def _read_forever(self) -> None:
        """The worker's one reader: a refresh when asked (a request, news) and,
        while clients wait, every ``changes_poll_interval`` anyway."""
        streak = Streak("reading")
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.changes_poll_interval):
                    await self._wanted.wait()
            if not self._wanted.is_set() and not self._waiting:
                continue
            self._wanted.clear()
            asking, self._asking = self._asking, []
            news = self._news_so_far()
            held = (self.tail.index, self.tail.epoch)
            try:
                await self._refresh()
            except Exception as exc:
                if not asking:
                    streak.failed(exc)
                for caller in asking:
                    if not caller.done():
                        caller.set_exception(exc)
            else:
                self._read_through = news
                streak.succeeded()
                for caller in asking:
                    if not caller.done():
                        caller.set_result(None)
            # Waking thousands of waiters to find nothing new would cost a
            # worker's CPU at every re-read.
            if (self.tail.index, self.tail.epoch) != held:
                self.signal.announce()

    async def _refresh(self) -> None:
        """Bring ``tail`` up to the feed's head (sequencing first, on a PostgreSQL primary)."""
        head = await self._sequenced_head()
        if head is None:
            async with unit_of_work(self._factory, write=False) as session:
                head = await feed_index.head(session)
        index = head.index
        tail = self.tail
        held = tail.index
        if (
            held is None
            or tail.epoch != head.epoch
            or not 0 <= index - held <= self.settings.changes_cache_size
        ):
            # A first read, a new epoch (failover), a restored database, or too far to catch up.
            tail.restart(head)
            return
        try:
            async with unit_of_work(self._factory, write=False) as session:
                while held < index:
                    held = tail.extend(await feed_index.read(session, held, READ_BATCH))
                # A reader behind what pruning (any worker's, or by hand) left gets its 410.
                tail.forget_before(await feed_index.first_index(session))
        except errors.ChangesGone as gone:
            tail.restart(FeedHead(gone.extra["index"], head.epoch))

    def _news_so_far(self) -> tuple[int, int] | None:
        """What this worker knows of commits (its own, and the notifications
        heard), or None while notifications may go unheard (not listening)."""
        listener = self._listener
        if listener is None or not listener.listening:
            return None
        return (listener.heard, self._committed)

    def _tail_knows_all_announced(self) -> bool:
        news = self._news_so_far()
        return news is not None and news == self._read_through

    async def fresh(self) -> None:
        """Return once a refresh that began after this call has ended: what
        committed before the call is in ``tail`` then (read your writes)."""
        caller = asyncio.get_running_loop().create_future()
        self._asking.append(caller)
        self._wanted.set()
        await caller

    async def prune(self) -> int:
        async with unit_of_work(self._factory, write=True) as session:
            return await feed_index.prune(session, self.settings.changes_retained)

    async def _prune_forever(self) -> None:
        streak = Streak("pruning")
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

    async def _page(self, since: int | None, limit: int) -> FeedPage:
        """From ``tail``, or from the database for a reader older than it."""
        page = self.tail.page(since, limit)
        if page is not None:
            return page
        async with unit_of_work(self._factory, write=False) as session:
            if since is None:
                top = await feed_index.head(session)
                return FeedPage(top.index, [], top.epoch)
            return await feed_index.read(session, since, limit)

    async def follow(
        self, since: int | None, limit: int, until: float, *, fresh: bool = True
    ) -> FeedPage:
        """The changes after ``since`` (none when it is None: just the latest
        index). With nothing newer, wait until the loop's time ``until`` for a
        change to commit; the page, empty or not, is returned then.

        ``fresh``: first wait for a refresh that began after the call (read
        your writes); an event stream already following needs none, nor does
        a wait while the tail was read after every announced commit: a commit
        not yet announced is announced, and read for the waiter, within the
        wait. So the re-polls that follow each change cost no reads of their own."""
        loop = asyncio.get_running_loop()
        # Counted from the start: a change committed from now on gets read for it.
        self._waiting += 1
        try:
            if fresh and not (until > loop.time() and self._tail_knows_all_announced()):
                await self.fresh()
            while True:
                mark = self.signal.mark()
                page = await self._page(since, limit)
                remaining = until - loop.time()
                if page.changes or remaining <= 0:
                    return page
                since = page.index if since is None else since
                await self.signal.wait(mark, remaining)
        finally:
            self._waiting -= 1
