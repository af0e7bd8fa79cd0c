"""Usage over the last hours, kept by the dashboard process itself (in memory).

Placement keeps no history and the page must not need Prometheus, so each
re-read of capacity adds one sample (at most one per ``step`` seconds):
cloud-wide used and capacity per resource class, and fits per flavor. The
oldest are dropped past ``hours``, so memory is bounded (6 hours at one a
minute: 360 samples of a few hundred bytes). A restart starts it empty.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from datetime import UTC, datetime

from placement_api.dashboard.snapshot import Json, Reads


class History:
    def __init__(self, step: float, hours: float, clock: Callable[[], float] = time.time) -> None:
        self._step = step
        self._clock = clock
        self._samples: collections.deque[Json] = collections.deque(
            maxlen=max(2, int(hours * 3600 / step))
        )
        self._last: float | None = None

    def record(self, reads: Reads) -> bool:
        """Add a sample of these answers unless the last is younger than a step."""
        now = self._clock()
        if self._last is not None and now - self._last < self._step:
            return False
        self._last = now
        classes = reads.usage.get("resource_classes") or {}
        self._samples.append(
            {
                "at": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "classes": {
                    rc: {"used": figures["used"], "capacity": figures["capacity"]}
                    for rc, figures in sorted(classes.items())
                },
                "fits": {flavor: answer["fits"] for flavor, answer in reads.fits.items()},
            }
        )
        return True

    def samples(self) -> list[Json]:
        return list(self._samples)
