"""Claims of concurrent decisions written together, as the load asks for it:
one ``POST /allocations`` carrying many claims costs Placement far less than
one each, and at low load nothing waits. Entries, refused and lost batches,
cancellation: docs/scheduler.md, "How it is built".
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from placement_client import PlacementError
from scheduler.placement.client import ClaimOutcome, NewClaim, SchedulerPlacement


@dataclass(eq=False)
class _Entry:
    claims: Sequence[NewClaim]
    outcome: asyncio.Future[ClaimOutcome]
    consumers: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.consumers = frozenset().union(*(claim.consumers for claim in self.claims))


class ClaimBatcher:
    def __init__(
        self,
        client: SchedulerPlacement,
        *,
        consumer_type: str,
        max_claims: int,
        in_flight: int,
    ) -> None:
        self._client = client
        self._consumer_type = consumer_type
        self._max_claims = max_claims
        self._slots = in_flight
        self._busy = 0
        self._queue: deque[_Entry] = deque()
        self._tasks: set[asyncio.Task[None]] = set()

    async def claim(self, claims: Sequence[NewClaim]) -> ClaimOutcome:
        """Write the claims, all or nothing, with whatever else is waiting."""
        entry = _Entry(claims, asyncio.get_running_loop().create_future())
        self._queue.append(entry)
        self._dispatch()
        try:
            return await asyncio.shield(entry.outcome)
        except asyncio.CancelledError:
            if entry in self._queue:
                self._queue.remove(entry)
            else:
                await asyncio.wait([entry.outcome])
                if not entry.outcome.cancelled():
                    entry.outcome.exception()  # seen: the caller is told by the cancellation
            raise

    def _dispatch(self) -> None:
        # With batches of one there is nothing to wait for: everything is sent at once.
        unlimited = self._max_claims == 1
        while self._queue and (unlimited or self._busy < self._slots):
            batch = self._next_batch()
            self._busy += 1
            task = asyncio.create_task(self._write(batch))
            self._tasks.add(task)
            task.add_done_callback(self._written)

    def _written(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._busy -= 1
        self._dispatch()

    def _next_batch(self) -> list[_Entry]:
        """The oldest entry, and the entries after it while they fit in ``max_claims``
        and name none of the batch's consumers (a POST names each consumer once)."""
        batch = [self._queue.popleft()]
        claims = len(batch[0].claims)
        consumers = set(batch[0].consumers)
        left: deque[_Entry] = deque()
        while self._queue:
            entry = self._queue.popleft()
            if claims + len(entry.claims) > self._max_claims:
                self._queue.appendleft(entry)
                break
            if entry.consumers & consumers:
                left.append(entry)
                continue
            batch.append(entry)
            claims += len(entry.claims)
            consumers |= entry.consumers
        self._queue.extendleft(reversed(left))
        return batch

    async def _write(self, batch: list[_Entry]) -> None:
        if len(batch) == 1:
            await self._write_alone(batch[0])
            return
        claims = [claim for entry in batch for claim in entry.claims]
        try:
            outcome = await self._client.claim_together(claims, consumer_type=self._consumer_type)
        except PlacementError as exc:
            if exc.status is None or not 400 <= exc.status < 500:
                for entry in batch:
                    _settle(entry, error=exc)
                return
            outcome = ClaimOutcome(claimed=False, detail=str(exc), written_with=len(claims))
        except BaseException:  # cancelled at shutdown: the outcome is unknown
            for entry in batch:
                _settle(entry, error=_unanswered("POST", "/allocations"))
            raise
        if outcome.claimed:
            for entry in batch:
                _settle(entry, outcome)
            return
        why = f"{len(claims)} claims sent together were refused: {outcome.detail}"
        await asyncio.gather(*(self._write_alone(entry, batch_refused=why) for entry in batch))

    async def _write_alone(self, entry: _Entry, batch_refused: str = "") -> None:
        try:
            if len(entry.claims) == 1:
                outcome = await self._client.claim(
                    entry.claims[0], consumer_type=self._consumer_type
                )
            else:
                outcome = await self._client.claim_together(
                    entry.claims, consumer_type=self._consumer_type
                )
        except Exception as exc:
            _settle(entry, error=exc)
            return
        except BaseException:
            _settle(entry, error=_unanswered("PUT/POST", "/allocations"))
            raise
        if batch_refused:
            outcome = ClaimOutcome(
                outcome.claimed, outcome.detail, outcome.code, outcome.written_with, batch_refused
            )
        _settle(entry, outcome)


def _unanswered(method: str, path: str) -> PlacementError:
    return PlacementError(method, path, None, "the write was cancelled before Placement answered")


def _settle(
    entry: _Entry, outcome: ClaimOutcome | None = None, error: BaseException | None = None
) -> None:
    if entry.outcome.done():
        return
    if error is not None:
        entry.outcome.set_exception(error)
    else:
        assert outcome is not None
        entry.outcome.set_result(outcome)
