"""The collector is paused while any answer is built, and resumes only after the
last one, and only if it was running before; a started app sets its thresholds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from placement_api.serving.gc_policy import THRESHOLDS, collector_paused
from placement_api.settings import Settings
from tests.support.client import app_client


@pytest.fixture
def collector_running() -> Iterator[None]:
    before = gc.isenabled()
    gc.enable()
    yield
    if not before:
        gc.disable()


@pytest.mark.usefixtures("collector_running")
def test_the_collector_resumes_only_when_the_last_overlapping_answer_is_done() -> None:
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_running")
def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


async def test_a_started_app_collects_its_young_objects_less_often(settings: Settings) -> None:
    """Thousands of waiting long-polls keep their objects alive: with Python's
    defaults the collector walked them all again at every wave of answers."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        async with app_client(settings):
            assert gc.get_threshold() == THRESHOLDS
    finally:
        gc.set_threshold(*before)
