"""The retry policy alone: jittered waits within their bounds, and both limits."""

from __future__ import annotations

import httpx
import pytest

from placement_client import RetryPolicy
from placement_client.retry import resendable

POLICY = RetryPolicy(attempts=6, base_delay=0.5, max_delay=4.0, budget=20.0)


@pytest.mark.parametrize(("retry", "ceiling"), [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (7, 4.0)])
def test_each_wait_is_between_half_the_exponential_ceiling_and_the_ceiling(
    retry: int, ceiling: float
) -> None:
    delays = [POLICY.delay(retry) for _ in range(200)]
    assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
    assert len(set(delays)) > 100  # jittered, so clients that failed together spread


def test_the_attempts_bound_the_retries() -> None:
    allowed = [retry for retry in range(10) if POLICY.allows(retry, elapsed=0.0)]
    assert allowed == [0, 1, 2, 3, 4]


def test_no_retry_whose_wait_would_pass_the_time_budget() -> None:
    assert POLICY.allows(3, elapsed=16.0)
    assert not POLICY.allows(3, elapsed=16.5)


def test_only_requests_that_never_left_or_reads_are_sent_again() -> None:
    request = httpx.Request("POST", "http://placement/allocations")
    refused = httpx.ConnectError("refused", request=request)
    lost = httpx.ReadError("reset", request=request)
    assert resendable("POST", refused)
    assert not resendable("POST", lost)
    assert resendable("GET", lost)
