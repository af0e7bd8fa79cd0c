"""The garbage-collector policy: what start-up made is frozen, and the
collector is paused while a large answer is built.

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


def freeze_what_startup_made() -> None:
    """Modules, the app and the policy live as long as the process: frozen,
    they are left out of the collector's full passes, which would otherwise
    walk them all every few large answers."""
    gc.freeze()
