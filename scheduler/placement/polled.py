"""A Placement answer re-read on its own period, for data the change feed does not
carry (host heartbeats and metrics: written too often to be feed entries).

Read once at start and then every ``period`` seconds with a jitter of a
fifth, waiting on a stop event so that closing is immediate. Decisions read
``latest()``, never Placement. A failed read keeps the previous answer
(with its age) and is tried again next period; a 404 or 403 (a Placement
without the extension, or a token the policy refuses) stops the polling for
good and is logged once: ``latest()`` then stays None, which readers treat
as "nothing known".
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from placement_client import Forbidden, NotFound, PlacementError

T = TypeVar("T")
LOG = logging.getLogger(__name__)
JITTER = 0.2


class PolledAnswer(Generic[T]):
    def __init__(
        self,
        read: Callable[[], Awaitable[T]],
        *,
        what: str,
        period: float,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._read = read
        self._what = what
        self._period = period
        self._clock = clock
        self._rng = rng or random.Random()
        self._answer: T | None = None
        self._read_at: float | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def latest(self) -> T | None:
        return self._answer

    def age(self) -> float | None:
        """Seconds since the answer was read (None: nothing read yet)."""
        return None if self._read_at is None else self._clock() - self._read_at

    async def start(self) -> None:
        if await self._refresh():
            self._task = asyncio.create_task(self._poll(), name=f"poll {self._what}")

    async def aclose(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _poll(self) -> None:
        while True:
            delay = self._period * (1 - JITTER * self._rng.random())
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
                return
            except TimeoutError:
                pass
            if not await self._refresh():
                return

    async def _refresh(self) -> bool:
        """Read once; False when the answer will never come (no such extension)."""
        started = self._clock()
        try:
            answer = await self._read()
        except (NotFound, Forbidden) as exc:
            LOG.warning("%s not offered by Placement, not polled: %s", self._what, exc)
            return False
        except PlacementError as exc:
            LOG.warning("%s not read, the last answer is kept: %s", self._what, exc)
            return True
        self._answer, self._read_at = answer, started
        return True
