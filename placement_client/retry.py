"""When and how long to wait before sending a request again."""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

# A request on these never left: sending it again cannot write anything twice.
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Reads may be sent again after any transport failure; a write whose answer was
# lost may have been applied, so only its caller can decide.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
UNAVAILABLE = 503


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded in attempts and in total time."""

    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 2.0
    budget: float = 10.0

    def delay(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0 first): between half the
        exponential ceiling and the ceiling, so clients that failed together spread."""
        ceiling = self.delay_ceiling(retry)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def allows(self, retry: int, elapsed: float) -> bool:
        """Whether retry number ``retry`` may still be made, ``elapsed`` seconds in."""
        return retry + 1 < self.attempts and elapsed + self.delay_ceiling(retry) <= self.budget

    def delay_ceiling(self, retry: int) -> float:
        return min(self.max_delay, self.base_delay * 2.0**retry)


def resendable(method: str, error: Exception) -> bool:
    return isinstance(error, NEVER_SENT) or (
        method in SAFE_METHODS and isinstance(error, httpx.TransportError)
    )
