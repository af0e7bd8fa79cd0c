"""The scheduler process's garbage collector runs its youngest generation as seldom
as ``gc_young_threshold`` says, the older ones as Python configured them."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from scheduler.serving.collector import tune_collector
from scheduler.settings import SchedulerSettings


@pytest.fixture
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.usefixtures("restored")
def test_the_young_threshold_is_the_setting_and_the_others_stay() -> None:
    _, middle, oldest = gc.get_threshold()
    tune_collector(SchedulerSettings(gc_young_threshold=12_345))
    assert gc.get_threshold() == (12_345, middle, oldest)
