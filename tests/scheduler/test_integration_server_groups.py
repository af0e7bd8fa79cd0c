"""Server groups across scheduler processes, restarts and concurrent requests.

Two real scheduler processes take 64 concurrent requests for one group; the rule
is kept by Placement in each claim's transaction, so the database never holds
two anti-affinity members on one host, whatever each scheduler believed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from placement_api.settings import Settings
from scheduler.deciding.errors import NoValidHostError
from scheduler.request.spec import ScheduleRequest
from tests.db.allocation_state import _rows
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import Cloud, LivePlacement, new_uuid
from tests.scheduler.processes import SchedulerProcess, schedulers
from tests.support import databases

REQUESTS = 64
HOSTS = 4


@pytest.fixture
def two_schedulers(live_placement: LivePlacement) -> Iterator[list[SchedulerProcess]]:
    with schedulers(live_placement.url, 2) as started:
        yield started


def request(group: str, policy: str) -> dict[str, Any]:
    hint = {"uuid": group, "policy": policy, "name": "web"}
    return {"resources": {"VCPU": 1}, "hints": {"group": hint}}


async def fire(urls: list[str], bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """Every request at once, spread over the schedulers."""
    async with httpx.AsyncClient(timeout=120) as http:
        return list(
            await asyncio.gather(
                *(
                    http.post(f"{urls[i % len(urls)]}/v1/schedule", json=body)
                    for i, body in enumerate(bodies)
                )
            )
        )


async def consumers_per_host(live: LivePlacement) -> Counter[str]:
    """From the database: how many consumers hold allocations on each provider."""
    rows = await _rows(
        Settings(database_url=live.database_url),
        "SELECT rp.uuid, COUNT(DISTINCT a.consumer_id) FROM allocations a "
        "JOIN resource_providers rp ON rp.id = a.resource_provider_id GROUP BY rp.uuid",
    )
    return Counter({str(uuid): int(count) for uuid, count in rows})


def outcomes(responses: list[httpx.Response]) -> Counter[int]:
    return Counter(response.status_code for response in responses)


async def test_anti_affinity_across_two_schedulers_places_exactly_one_per_host(
    cloud: Cloud, live_placement: LivePlacement, two_schedulers: list[SchedulerProcess]
) -> None:
    hosts = {await cloud.host(f"host-{i}") for i in range(HOSTS)}
    group = new_uuid()
    bodies = [request(group, "anti-affinity") for _ in range(REQUESTS)]
    responses = await fire([s.url for s in two_schedulers], bodies)
    assert outcomes(responses) == {200: HOSTS, 409: REQUESTS - HOSTS}
    for refused in (r for r in responses if r.status_code == 409):
        assert "anti-affinity" in refused.json()["errors"][0]["detail"]
    placed = {r.json()["selections"][0]["provider"]["uuid"] for r in responses if r.is_success}
    assert placed == hosts
    assert await consumers_per_host(live_placement) == dict.fromkeys(hosts, 1)


# Concurrency proofs where claims really run in parallel (SQLite has one writer).
ON_POSTGRESQL = pytest.mark.parametrize(
    "live_placement", [b for b in databases.BACKENDS if b == "postgresql"], indirect=True
)


@ON_POSTGRESQL
async def test_a_restarted_scheduler_still_keeps_the_group_apart(
    cloud: Cloud, live_placement: LivePlacement, two_schedulers: list[SchedulerProcess]
) -> None:
    hosts = {await cloud.host(f"host-{i}") for i in range(HOSTS)}
    group = new_uuid()
    urls = [s.url for s in two_schedulers]
    first = await fire(urls, [request(group, "anti-affinity") for _ in range(2)])
    assert outcomes(first) == {200: 2}
    two_schedulers[1].restart()  # forgets everything it placed
    urls = [s.url for s in two_schedulers]
    rest = await fire(urls, [request(group, "anti-affinity") for _ in range(REQUESTS - 2)])
    assert outcomes(rest) == {200: HOSTS - 2, 409: REQUESTS - HOSTS}
    assert await consumers_per_host(live_placement) == dict.fromkeys(hosts, 1)


@ON_POSTGRESQL
async def test_affinity_across_two_schedulers_keeps_every_member_on_one_host(
    cloud: Cloud, live_placement: LivePlacement, two_schedulers: list[SchedulerProcess]
) -> None:
    for i in range(HOSTS):
        await cloud.host(f"host-{i}", vcpu=REQUESTS)
    group = new_uuid()
    bodies = [request(group, "affinity") for _ in range(REQUESTS)]
    responses = await fire([s.url for s in two_schedulers], bodies)
    placed = [r.json()["selections"][0]["provider"]["uuid"] for r in responses if r.is_success]
    assert len(set(placed)) == 1
    for refused in (r for r in responses if not r.is_success):
        assert refused.status_code == 409
        assert "affinity" in refused.json()["errors"][0]["detail"]
    assert await consumers_per_host(live_placement) == {placed[0]: len(placed)}


async def test_a_request_naming_the_group_with_another_rule_is_refused(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("host-0")
    group = new_uuid()
    scheduler = make_scheduler()
    await scheduler.schedule(ScheduleRequest.model_validate(request(group, "anti-affinity")))
    with pytest.raises(NoValidHostError, match="has policy anti-affinity with max_server_per"):
        await scheduler.schedule(ScheduleRequest.model_validate(request(group, "affinity")))
