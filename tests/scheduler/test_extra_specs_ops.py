"""Aggregate metadata values against extra spec requirements with operators."""

from __future__ import annotations

import pytest

from scheduler.plugins.extra_specs_ops import satisfies


@pytest.mark.parametrize(
    ("value", "requirement", "expected"),
    [
        ("ssd", "ssd", True),
        ("hdd", "ssd", False),
        ("8", "= 4", True),
        ("2", "= 4", False),
        ("4", "== 4.0", True),
        ("4", "!= 4", False),
        ("10", ">= 10", True),
        ("11", "<= 10", False),
        ("fast", "= 4", False),
        ("abc", "s== abc", True),
        ("abc", "s!= abc", False),
        ("abc", "s< abd", True),
        ("b", "s>= a", True),
        ("gold-ssd", "<in> ssd", True),
        ("hdd", "<in> ssd", False),
        ("b", "<or> a <or> b", True),
        ("c", "<or> a <or> b", False),
    ],
)
def test_operator_semantics(value: str, requirement: str, expected: bool) -> None:
    assert satisfies(value, requirement) is expected
