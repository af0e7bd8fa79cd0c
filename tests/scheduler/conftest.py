"""Integration fixtures: a live Placement per backend, cleaned after every test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from placement_api.db.engine import create_engine
from scheduler.deciding.engine import Scheduler
from scheduler.placement.client import SchedulerPlacement
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import Cloud, LivePlacement, placement_on, scheduler_placement
from tests.support import databases


@pytest.fixture(scope="session", params=databases.BACKENDS)
def live_placement(request: pytest.FixtureRequest) -> Iterator[LivePlacement]:
    with placement_on(request.param) as placement:
        yield placement


@pytest.fixture
async def cloud(live_placement: LivePlacement) -> AsyncIterator[Cloud]:
    async with httpx.AsyncClient(base_url=live_placement.url, timeout=30) as http:
        yield Cloud(http)
    engine = create_engine(live_placement.database_url)
    try:
        await databases.clean(engine)
    finally:
        await engine.dispose()


@pytest.fixture
def scheduler_settings(live_placement: LivePlacement) -> SchedulerSettings:
    return SchedulerSettings(api_url=live_placement.url, provider_cache_seconds=0)


MakeScheduler = Callable[..., Scheduler]


@pytest.fixture
async def make_scheduler(
    scheduler_settings: SchedulerSettings,
) -> AsyncIterator[MakeScheduler]:
    clients: list[SchedulerPlacement] = []

    def build(**overrides: object) -> Scheduler:
        settings = scheduler_settings.model_copy(update=overrides)
        client = scheduler_placement(settings.api_url)
        clients.append(client)
        return Scheduler(settings, client)

    yield build
    for client in clients:
        await client.aclose()
