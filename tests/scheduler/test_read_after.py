"""Which ``X-Placement-Read-After`` position the scheduler's reads carry after its
claims were answered with several."""

from __future__ import annotations

import pytest

from scheduler.placement.client import furthest


@pytest.mark.parametrize(
    ("kept", "answered", "sent"),
    [
        (None, None, None),
        (None, "0/5A3C2B8", "0/5A3C2B8"),
        ("0/5A3C2B8", None, "0/5A3C2B8"),
        ("0/5A3C2B8", "0/5A3C2C0", "0/5A3C2C0"),
        ("0/5A3C2C0", "0/5A3C2B8", "0/5A3C2C0"),  # answered out of order: the further
        ("0/FFFFFFFF", "1/0", "1/0"),  # the high word counts first
        ("1/0", "0/FFFFFFFF", "1/0"),
        ("0/5A3C2B8", "primary", "primary"),
        ("primary", "0/5A3C2B8", "0/5A3C2B8"),
    ],
)
def test_reads_ask_for_the_furthest_position_answered(
    kept: str | None, answered: str | None, sent: str | None
) -> None:
    assert furthest(kept, answered) == sent
