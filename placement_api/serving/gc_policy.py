"""The garbage-collector policy: what start-up made is frozen, the young
generations are collected less often, and the collector is paused while a
large answer is built.

A large answer (candidates, the capacity report) builds hundreds of
thousands of short-lived containers, none in a reference cycle; the
collector's passes over them would cost as much as the work. Requests share
one event loop, so a depth count makes the last one out restore the
collector, and only if it was running before.
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


# Python's defaults (700, 10, 10) suit short scripts. A worker holding
# thousands of waiting requests (the change feed's long-polls) keeps all
# their objects alive, and the defaults made it walk them again and again:
# in the watchers benchmark (docs/performance-abuse.md) the collector took
# 4.4 s of a worker's 7.4 s of CPU, 20 full passes of 165 ms among them.
# With these, about 1 s and 2 full passes; garbage in reference cycles
# waits longer to be freed, a few MB at most.
THRESHOLDS = (10_000, 20, 20)


def freeze_what_startup_made() -> None:
    """Modules, the app and the policy live as long as the process: frozen,
    they are left out of the collector's full passes, which would otherwise
    walk them all every few large answers. The thresholds are set then too."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
