"""When the provider index re-reads which providers (pure, no I/O).

Writes made outside the API (hand-written SQL) record no change-feed
entries, so the index also re-reads every provider on its own: a span of
ids at a time, the spans of one sweep spread over ``max_age`` seconds, so
that no refresh pays for more than a span (a whole reload at 300,000
providers would hold a worker's candidate requests for seconds).
"""

from __future__ import annotations

# Providers (by id) re-read by one step of a sweep.
SWEEP_SPAN = 1000


class Sweep:
    """The spans of the current sweep, and when the next one is due."""

    def __init__(self, max_age: float) -> None:
        self._max_age = max_age
        self._next_id = 0
        self._last_id = -1
        self._interval = max_age
        self._due = 0.0
        self._started = 0.0

    def start(self, first_id: int, last_id: int, now: float) -> None:
        """A sweep over ids ``first_id`` to ``last_id``, its first span due
        after one interval."""
        spans = max(1, -(-(last_id - first_id + 1) // SWEEP_SPAN))
        self._next_id, self._last_id = first_id, last_id
        self._interval = self._max_age / spans
        self._due = now + self._interval
        self._started = now

    def due(self, now: float) -> bool:
        return now >= self._due

    def stale(self, now: float) -> bool:
        """The sweep has fallen a whole ``max_age`` behind (the worker had
        no candidate requests): a whole reload is what bounds the age."""
        return now - self._started > 2 * self._max_age

    def next_span(self, now: float) -> tuple[int, int] | None:
        """The ids to re-read now (both included); None when the sweep is over
        (the caller starts the next one from the table's extent)."""
        if self._next_id > self._last_id:
            return None
        span = (self._next_id, self._next_id + SWEEP_SPAN - 1)
        self._next_id += SWEEP_SPAN
        self._due = now + self._interval
        return span
