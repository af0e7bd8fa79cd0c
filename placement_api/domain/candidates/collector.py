"""Pausing the cyclic garbage collector while a large answer is assembled.

A large candidate list builds hundreds of thousands of short-lived
containers, and the collector's passes over them cost as much as the work
itself; nothing built for an answer forms reference cycles, so reference
counting frees it all. Requests share one event loop, so a depth count makes
the last one out restore the collector, and only if it was running before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class _State:
    depth = 0
    restore = False


@contextmanager
def collector_paused() -> Iterator[None]:
    if _State.depth == 0:
        _State.restore = gc.isenabled()
        gc.disable()
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
        if _State.depth == 0 and _State.restore:
            gc.enable()
