"""How often the scheduler reads ``GET /heartbeats`` from a real Placement (SQLite
and PostgreSQL): one answer serves the requests of ``host_cache_seconds``, and
none is read when no enabled plugin needs heartbeats."""

from __future__ import annotations

import httpx

from scheduler.deciding.engine import Scheduler
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.scheduler.factories import Clock
from tests.scheduler.live import Cloud, scheduler_placement

TTL = 30.0


class HeartbeatReads(httpx.AsyncHTTPTransport):
    """Real HTTP; counts the GET /heartbeats sent."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += request.url.path == "/heartbeats"
        return await super().handle_async_request(request)


def one() -> ScheduleRequest:
    return ScheduleRequest.model_validate({"resources": {"VCPU": 1}})


async def reads_for(settings: SchedulerSettings, steps: list[float]) -> int:
    """Schedule once per step, moving the clock by the step first; GET /heartbeats sent."""
    transport, clock = HeartbeatReads(), Clock()
    client = scheduler_placement(settings.api_url, transport)
    try:
        scheduler = Scheduler(settings, client, clock=clock)
        for step in steps:
            clock.now += step
            await scheduler.schedule(one())
    finally:
        await client.aclose()
    return transport.count


async def test_one_heartbeats_answer_serves_the_requests_of_the_cache_lifetime(
    cloud: Cloud, scheduler_settings: SchedulerSettings
) -> None:
    await cloud.host("host", vcpu=64)
    settings = scheduler_settings.model_copy(update={"host_cache_seconds": TTL})
    assert await reads_for(settings, [0, TTL / 2, TTL / 2 - 1]) == 1
    assert await reads_for(settings, [0, TTL + 1]) == 2
    without = settings.model_copy(update={"enabled_filters": ["compute_enabled"]})
    assert await reads_for(without, [0, TTL + 1]) == 0
