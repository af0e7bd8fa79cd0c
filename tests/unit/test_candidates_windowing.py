"""The windowing policy, with plain ints: the first window from the candidates
wanted, later ones from the yield so far, the rest at once after a window
without a candidate, and read-ahead only while windows yield."""

from __future__ import annotations

import sys

from placement_api.domain.candidates.windowing import Progress, WindowPolicy

POLICY = WindowPolicy(per_candidate=1.25, min_window=256, few_per_candidate=4)


def test_the_first_window_takes_a_share_more_root_ids_than_candidates_wanted() -> None:
    assert POLICY.start(1000) == Progress(wanted=1000, size=1250)


def test_a_small_limit_still_takes_the_smallest_window() -> None:
    assert POLICY.start(10).size == 256


def test_the_next_window_is_sized_from_the_yield_so_far() -> None:
    # 1,250 root ids gave 500 candidates (0.4 each): 500 more need 1,250 at
    # that rate, and a quarter again.
    after = POLICY.after(POLICY.start(1000), found=500)
    assert after == Progress(wanted=1000, size=1562, scanned=1250, found=500)
    assert after.still_wanted == 500
    assert not after.complete


def test_a_window_without_a_candidate_makes_the_next_take_the_rest() -> None:
    after = POLICY.after(POLICY.start(1000), found=0)
    assert after.size == sys.maxsize


def test_a_later_window_is_never_below_the_smallest() -> None:
    after = POLICY.after(POLICY.start(1000), found=999)
    assert after.size == 256


def test_the_search_is_complete_once_enough_candidates_are_found() -> None:
    assert POLICY.after(POLICY.start(1000), found=1000).complete


def test_summaries_are_read_ahead_first_and_then_only_while_windows_yield() -> None:
    first = POLICY.start(1000)
    assert first.read_ahead
    assert POLICY.after(first, found=3).read_ahead
    assert not POLICY.after(first, found=0).read_ahead


def test_few_is_at_most_four_per_candidate_wanted() -> None:
    assert POLICY.is_few(4000, 1000)
    assert not POLICY.is_few(4001, 1000)


def test_windows_sized_from_a_yield_stay_within_the_fenced_size() -> None:
    # 1,250 root ids gave 50 candidates: 950 more would need 23,750.
    after = POLICY.after(POLICY.start(1000), found=50)
    assert after.size == POLICY.max_window == 4096
    assert POLICY.start(10_000).size == 4096
