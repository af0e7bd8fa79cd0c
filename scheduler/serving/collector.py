"""The garbage collector of a scheduler process, tuned once at start-up.

A decision allocates many short-lived objects (explanations, verdicts, weight
columns) while the host cache holds hundreds of thousands of long-lived ones.
At Python's default threshold (700) the youngest generation is collected every
few decisions and older ones often; the objects a decision leaves behind are
few, so collecting seldom keeps memory about the same and saves the CPU.
"""

from __future__ import annotations

import gc

from scheduler.settings import SchedulerSettings


def tune_collector(settings: SchedulerSettings) -> None:
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(settings.gc_young_threshold, middle, oldest)
