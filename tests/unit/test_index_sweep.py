"""A sweep re-reads every provider id once, a span at a time, its spans
spread over ``max_age``; one fallen far behind asks for a whole reload."""

from __future__ import annotations

from placement_api.domain.candidates.index_sweep import SWEEP_SPAN, Sweep


def test_a_sweep_covers_the_ids_once_spread_over_max_age() -> None:
    sweep = Sweep(max_age=300.0)
    last_id = 3 * SWEEP_SPAN + 7
    sweep.start(1, last_id, now=1000.0)
    interval = 300.0 / 4
    assert not sweep.due(1000.0 + interval - 1)
    now, covered = 1000.0, list[int]()
    while True:
        now += interval
        assert sweep.due(now)
        span = sweep.next_span(now)
        if span is None:
            break
        assert not sweep.due(now + interval - 1)
        covered.extend(range(span[0], span[1] + 1))
    assert covered[:last_id] == list(range(1, last_id + 1))
    assert now - 1000.0 == 5 * interval


def test_a_sweep_fallen_two_max_ages_behind_is_stale() -> None:
    sweep = Sweep(max_age=10.0)
    sweep.start(1, 5, now=0.0)
    assert not sweep.stale(20.0)
    assert sweep.stale(20.5)
