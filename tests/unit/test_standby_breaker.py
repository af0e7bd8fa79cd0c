"""The standby's breaker (db.replica.StandbyBreaker): one read per trip pays and logs."""

from __future__ import annotations

import time

import pytest

from placement_api.db.replica import StandbyBreaker


def test_a_failure_keeps_reads_away_for_the_interval_then_admits_one_probe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    breaker = StandbyBreaker(0.2)
    assert breaker.admit()
    breaker.failed(TimeoutError(), probe=False)
    # Reads admitted before the trip end without a second trip or log line.
    breaker.failed(ConnectionError("gone"), probe=False)
    breaker.answered(probe=False)
    assert breaker.tripped
    assert not breaker.admit()
    time.sleep(0.25)
    assert breaker.admit()  # the probe
    assert not breaker.admit()  # the others wait for its answer
    breaker.released(probe=True)  # it ended (cancelled) before answering
    assert breaker.admit()
    breaker.answered(probe=True)
    assert not breaker.tripped
    assert breaker.admit()
    assert [r.getMessage() for r in caplog.records].count(
        "standby unavailable, reads go to the primary for 0.2s: TimeoutError"
    ) == 1


def test_a_failing_probe_trips_again() -> None:
    breaker = StandbyBreaker(0.05)
    breaker.failed(OSError("refused"), probe=False)
    time.sleep(0.06)
    assert breaker.admit()
    breaker.failed(OSError("refused"), probe=True)
    assert breaker.tripped
    assert not breaker.admit()
