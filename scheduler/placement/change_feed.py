"""Following Placement's change feed (``GET /changes``, docs/changes.md) for the host cache.

One ``ChangeFollower`` per scheduler, started and stopped with it. It asks
for the changes after the last index it applied, holding the request open
(``wait``) until one commits, and hands each page to its ``FeedReader`` (the
host cache) in one call, so a decision never sees half a page applied. A 410
(the changes it needs were pruned), a page that does not start right after
its index, or a page of another epoch (a failover may have given its
indexes to other entries, docs/ha.md) is a gap: the reader drops everything it derived from the feed
(``resync``) and the follower resumes from the feed's head. Without the feed
(a 404: upstream Placement; a 403: a token the policy refuses it) the
follower stops for good and says so: the cache then lives on its timer.
While Placement cannot be reached the reader is told (``following(False)``),
so the cache falls back to its timer until the feed answers again. After a
page that reached the head it waits ``pace`` seconds before asking again,
so that under a stream of writes one answer carries many changes (each
answer costs the API about as much as a small read).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Protocol

from placement_client import Forbidden, NotFound, PlacementError
from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.feed_effects import Change

LOG = logging.getLogger(__name__)
GONE = 410


class FeedReader(Protocol):
    def apply(self, changes: Sequence[Change]) -> None:
        """Changes in index order, each carrying the state after its write."""

    def resync(self, index: int) -> None:
        """What the feed said before ``index`` may be missing: read it all again."""

    def following(self, live: bool) -> None:
        """Whether the feed is being followed (False: changes may be missed for now)."""


class ChangeFollower:
    def __init__(
        self,
        client: SchedulerPlacement,
        reader: FeedReader,
        *,
        wait: int,
        pace: float = 0.0,
        page: int = 1000,
        retry_seconds: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._reader = reader
        self._wait = wait
        self._pace = pace
        self._page = page
        self._retry = retry_seconds
        self._rng = rng or random.Random()
        self._task: asyncio.Task[None] | None = None
        self._progress = asyncio.Condition()
        self.index: int | None = None  # the last index applied
        self.epoch: str | None = None  # the history ``index`` belongs to

    async def start(self) -> bool:
        """Follow the feed from its head; False when Placement has no feed for this
        scheduler (the cache then keeps its timer). A Placement that does not answer
        yet is asked again in the background."""
        try:
            await self._restart()
        except (NotFound, Forbidden) as exc:
            LOG.warning(
                "Placement offers no change feed to this scheduler (%s): the host cache "
                "refreshes on its timer (host_cache_seconds)",
                exc,
            )
            return False
        except PlacementError as exc:
            LOG.warning("change feed not reachable yet, cache on its timer meanwhile: %s", exc)
        self._task = asyncio.create_task(self._follow(), name="placement-change-feed")
        return True

    async def reached(self, index: int) -> None:
        """Return once every change up to ``index`` has been applied."""
        async with self._progress:
            await self._progress.wait_for(lambda: self.index is not None and self.index >= index)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._reader.following(False)

    async def _follow(self) -> None:
        failures = 0
        while True:
            try:
                if self.index is None:
                    await self._restart()
                else:
                    await self._next_page()
            except PlacementError as exc:
                failures += 1
                if failures == 1:
                    LOG.warning("change feed unavailable, cache on its timer meanwhile: %s", exc)
                    self._reader.following(False)
                await asyncio.sleep(self._backoff(failures))
                continue
            if failures:
                LOG.info("change feed followed again")
                self._reader.following(True)
                failures = 0
            async with self._progress:
                self._progress.notify_all()

    async def _next_page(self) -> None:
        assert self.index is not None
        try:
            page = await self._client.changes(self.index, wait=self._wait, limit=self._page)
        except PlacementError as exc:
            if exc.status != GONE:
                raise
            await self._gap(f"the changes after {self.index} were pruned")
            return
        changes = page.changes
        if page.epoch != self.epoch:
            await self._gap(f"the feed's epoch changed from {self.epoch} to {page.epoch}")
        elif changes and int(changes[0]["index"]) != self.index + 1:
            await self._gap(f"the feed jumped from {self.index} to {changes[0]['index']}")
        elif changes:
            self._reader.apply(changes)
            self.index = int(changes[-1]["index"])
            if self.index == page.index and self._pace:
                # Let writes gather: one answer then carries many (each costs the API).
                await asyncio.sleep(self._pace)
        elif page.index < self.index:
            await self._gap(f"the feed's head {page.index} is behind {self.index} (restored?)")

    async def _gap(self, why: str) -> None:
        LOG.warning("change feed gap (%s): the host cache reads everything again", why)
        await self._restart()

    async def _restart(self) -> None:
        """Follow from the head, everything derived from the feed dropped. The head is
        read first, so whatever commits meanwhile is replayed."""
        head = await self._client.changes(None)
        self._reader.resync(head.index)
        self._reader.following(True)
        self.index, self.epoch = head.index, head.epoch

    def _backoff(self, failures: int) -> float:
        delay: float = min(30.0, self._retry * 2 ** min(failures - 1, 5))
        return delay * (0.5 + self._rng.random() / 2)
