"""A search's turns on its worker's event loop: a search is CPU work with no
I/O, so without pauses it would hold the worker, and every request on it,
until done, and its request's deadline could not cut it short. ``gather``
pauses (``asyncio.sleep(0)``) once a slice of time has passed: the others run,
and a cancellation (the deadline, a client gone) lands there and stops it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

# Candidates between two looks at the clock: a look costs about as much as
# finding a candidate, so they are taken in batches. Every tick is looked at.
CHECK_EVERY = 128


async def gather(steps: Iterator[T | None], slice_seconds: float) -> list[T]:
    """The items of ``steps`` (None are ticks, skipped), pausing after each
    ``slice_seconds`` of work."""
    found: list[T] = []
    clock = time.perf_counter
    resumed = clock()
    count = 0
    for step in steps:
        if step is not None:
            found.append(step)
            count += 1
            if count < CHECK_EVERY:
                continue
        count = 0
        if clock() - resumed >= slice_seconds:
            await asyncio.sleep(0)
            resumed = clock()
    return found
