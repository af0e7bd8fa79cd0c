"""The host cache following the change feed, against a real Placement server
(SQLite and PostgreSQL): other clients' writes reach decisions without any
timer (the clock never moves and answers would live an hour), a refused claim
re-reads its host, a gap in the feed re-reads everything and the feed is
followed again, and the scheduler's own claims are counted exactly once."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import text

from placement_api.db.engine import create_engine
from scheduler.deciding.engine import Scheduler
from scheduler.placement.client import READ_AFTER, SchedulerPlacement
from scheduler.placement.query import candidates_query
from scheduler.request.spec import ScheduleRequest, resource_request
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import HEADERS, Cloud, LivePlacement, new_uuid, scheduler_placement

FLAVOR = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
CATCH_UP_SECONDS = 30


class FeedGate(httpx.AsyncHTTPTransport):
    """Real HTTP. Counts candidates reads and per-provider reads and keeps the
    position the last of them asked for; while closed, holds the scheduler's next
    ``GET /changes`` before it is sent (the feed falls behind)."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.open.set()
        self.held = asyncio.Event()
        self.requests: Counter[str] = Counter()
        self.read_after: dict[str, str | None] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/allocation_candidates" and request.url.params.get("limit") != "1":
            self.requests["candidates"] += 1
            self.read_after["candidates"] = request.headers.get(READ_AFTER)
        elif path.endswith("/usages"):
            self.requests["usages"] += 1
            self.read_after["usages"] = request.headers.get(READ_AFTER)
        elif path == "/changes" and not self.open.is_set():
            self.held.set()
            await self.open.wait()
            self.held.clear()
        return await super().handle_async_request(request)


@pytest.fixture
async def following(
    scheduler_settings: SchedulerSettings,
) -> AsyncIterator[tuple[Scheduler, FeedGate]]:
    gate = FeedGate()
    client: SchedulerPlacement = scheduler_placement(scheduler_settings.api_url, gate)
    settings = scheduler_settings.model_copy(
        update={"host_cache_seconds": 3600.0, "provider_cache_seconds": 3600.0}
    )
    scheduler = Scheduler(settings, client, clock=lambda: 1000.0)
    await scheduler.start()
    assert scheduler.host_cache.live
    yield scheduler, gate
    gate.open.set()
    await scheduler.aclose()
    await client.aclose()


async def caught_up(scheduler: Scheduler, cloud: Cloud) -> None:
    """Wait until the scheduler has applied every change committed so far."""
    head = (await cloud.http.get("/changes", headers=HEADERS)).json()["index"]
    await asyncio.wait_for(scheduler.feed.reached(head), CATCH_UP_SECONDS)


async def hold_feed(gate: FeedGate, cloud: Cloud) -> None:
    """Close the gate and wait until the follower's next request is held there (a
    write wakes the request in flight, whose answer passes)."""
    gate.open.clear()
    await cloud.http.put(f"/traits/CUSTOM_WAKE_{uuid.uuid4().hex.upper()}", headers=HEADERS)
    await asyncio.wait_for(gate.held.wait(), CATCH_UP_SECONDS)


def one(consumer: str | None = None) -> ScheduleRequest:
    body: dict[str, object] = {"resources": FLAVOR}
    if consumer:
        body["consumer_uuids"] = [consumer]
    return ScheduleRequest.model_validate(body)


async def free_vcpu(scheduler: Scheduler, host: str, request: ScheduleRequest | None = None) -> int:
    """As the cache has it, from its answer to ``request`` (one instance of FLAVOR)."""
    limit = scheduler.settings.max_allocation_candidates
    query = candidates_query(resource_request(request or one()), limit)
    view = await scheduler.host_cache.view(query)
    return next(h.free("VCPU") for h in view.hosts if h.uuid == host)


async def test_a_provider_another_client_adds_is_chosen_without_a_timer(
    cloud: Cloud, following: tuple[Scheduler, FeedGate]
) -> None:
    scheduler, gate = following
    await cloud.host("first", memory_mb=8192)
    await scheduler.schedule(one())
    roomy = await cloud.host("roomy", memory_mb=65536)
    await caught_up(scheduler, cloud)
    placed = await scheduler.schedule(one())
    assert placed.selections[0].provider.uuid == roomy
    assert placed.selections[0].provider.name == "roomy"
    assert gate.requests["candidates"] == 2  # the new provider's inventory made it read


async def test_inventory_and_another_consumers_usage_update_the_cache_in_place(
    cloud: Cloud, following: tuple[Scheduler, FeedGate]
) -> None:
    scheduler, gate = following
    a = await cloud.host("a", vcpu=8)
    b = await cloud.host("b", vcpu=8)
    await scheduler.schedule(one())
    body = {
        "resource_provider_generation": (await cloud.http.get(
            f"/resource_providers/{a}", headers=HEADERS
        )).json()["generation"],
        "inventories": {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 32768},
                        "DISK_GB": {"total": 500}},
    }  # fmt: skip
    response = await cloud.http.put(f"/resource_providers/{a}/inventories", json=body,
                                    headers=HEADERS)  # fmt: skip
    assert response.status_code == 200, response.text
    await cloud.allocate(new_uuid(), b, {"VCPU": 8 - (await cloud.usages(b)).get("VCPU", 0)})
    await caught_up(scheduler, cloud)
    for rp, total in ((a, 64), (b, 8)):
        assert await free_vcpu(scheduler, rp) == total - (await cloud.usages(rp))["VCPU"]
    placed = await scheduler.schedule(one())
    assert placed.selections[0].provider.uuid == a  # b is full: not even tried
    assert [c.outcome for c in placed.explanation.instances[0].claims] == ["claimed"]
    assert gate.requests["candidates"] == 1  # no read: both changes applied in place


async def test_a_refused_claim_re_reads_its_host_and_moves_on(
    cloud: Cloud, following: tuple[Scheduler, FeedGate]
) -> None:
    scheduler, gate = following
    big = await cloud.host("big", vcpu=4, memory_mb=65536)
    small = await cloud.host("small", vcpu=2, memory_mb=8192, disk_gb=100)  # big weighs more
    await caught_up(scheduler, cloud)
    await hold_feed(gate, cloud)  # this claim's entry and the other client's are unseen
    assert (await scheduler.schedule(one())).selections[0].provider.uuid == big
    await cloud.allocate(new_uuid(), big, {"VCPU": 2})
    consumer = new_uuid()
    second = await scheduler.schedule(one(consumer))
    claims = second.explanation.instances[0].claims
    assert [(a.host, a.outcome) for a in claims] == [("big", "conflict"), ("small", "claimed")]
    assert gate.requests["usages"] == 1  # big's figures read again
    assert gate.read_after == {"candidates": None, "usages": "primary"}  # no standby here
    assert await free_vcpu(scheduler, big) == 0  # the figures read include the first claim
    assert await cloud.allocations(consumer) == {small: FLAVOR}
    gate.open.set()
    await caught_up(scheduler, cloud)
    assert (await free_vcpu(scheduler, big), await free_vcpu(scheduler, small)) == (0, 0)
    assert gate.requests["candidates"] == 1
    for rp in (big, small):
        await cloud.assert_within_capacity(rp)


async def test_a_gap_in_the_feed_re_reads_everything_and_follows_again(
    cloud: Cloud,
    following: tuple[Scheduler, FeedGate],
    live_placement: LivePlacement,
) -> None:
    scheduler, gate = following
    host = await cloud.host("h", vcpu=8)
    await scheduler.schedule(one())
    await hold_feed(gate, cloud)
    behind = scheduler.feed.index
    assert behind is not None
    await cloud.allocate(new_uuid(), host, {"VCPU": 3})
    await cloud.allocate(new_uuid(), host, {"VCPU": 1})
    await cloud.http.get("/changes", headers=HEADERS)  # the new entries get their indexes
    engine = create_engine(live_placement.database_url)
    try:
        async with engine.begin() as connection:  # pruned, as retention would
            await connection.execute(
                text("DELETE FROM changes WHERE feed_index <= :n"), {"n": behind + 1}
            )
    finally:
        await engine.dispose()
    # A read that does not wait refreshes the API's tail, which forgets what
    # was pruned (a waiting one is served from the tail as it was).
    gone = await cloud.http.get(f"/changes?since={behind}", headers=HEADERS)
    assert gone.status_code == 410
    gate.open.set()
    await caught_up(scheduler, cloud)
    assert await free_vcpu(scheduler, host) == 8 - 2 - 3 - 1  # read again after the 410
    assert gate.requests["candidates"] == 2
    await cloud.allocate(new_uuid(), host, {"VCPU": 1})  # followed again from the head
    await caught_up(scheduler, cloud)
    assert await free_vcpu(scheduler, host) == 1
    assert gate.requests["candidates"] == 2


async def test_a_new_epoch_re_reads_everything_though_the_indexes_run_on(
    cloud: Cloud,
    following: tuple[Scheduler, FeedGate],
    live_placement: LivePlacement,
) -> None:
    """A failover may give the indexes the cache applied to other changes: the
    feed's epoch changes (here by hand, as a promoted standby's first
    sequencing run does) and the cache reads everything again."""
    scheduler, gate = following
    host = await cloud.host("h", vcpu=8)
    await scheduler.schedule(one())
    await caught_up(scheduler, cloud)
    engine = create_engine(live_placement.database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("UPDATE change_feed_head SET epoch = 'after-failover'"))
    finally:
        await engine.dispose()
    await cloud.allocate(new_uuid(), host, {"VCPU": 3})
    await caught_up(scheduler, cloud)
    assert scheduler.feed.epoch == "after-failover"
    assert gate.requests["candidates"] == 1  # nothing read again before a decision asks
    assert await free_vcpu(scheduler, host) == 8 - 2 - 3
    assert gate.requests["candidates"] == 2  # the cache was dropped: read again


async def test_own_claims_count_once_before_and_after_their_feed_entry(
    cloud: Cloud, following: tuple[Scheduler, FeedGate]
) -> None:
    scheduler, gate = following
    host = await cloud.host("h", vcpu=8)
    await hold_feed(gate, cloud)
    placed = await scheduler.schedule(ScheduleRequest.model_validate(
        {"resources": FLAVOR, "num_instances": 2}
    ))  # fmt: skip
    await scheduler.schedule(one())
    assert await free_vcpu(scheduler, host) == 8 - 3 * 2  # counted before the feed says
    small = ScheduleRequest.model_validate({"resources": {"VCPU": 1}})
    assert await free_vcpu(scheduler, host, small) == 8 - 3 * 2  # by an answer read since
    assert gate.requests["candidates"] == 2
    gate.open.set()
    await caught_up(scheduler, cloud)
    assert await free_vcpu(scheduler, host) == 8 - 3 * 2  # and once after it
    assert (await cloud.usages(host))["VCPU"] == 6
    last = await scheduler.schedule(one())
    assert last.explanation.instances[0].hosts_with_room == 1
    assert gate.requests["candidates"] == 2
    assert len(placed.selections) == 2


async def test_the_timer_source_leaves_the_feed_alone_and_answers_expire(
    cloud: Cloud, scheduler_settings: SchedulerSettings
) -> None:
    gate = FeedGate()
    client = scheduler_placement(scheduler_settings.api_url, gate)
    settings = scheduler_settings.model_copy(
        update={"host_cache_source": "timer", "host_cache_seconds": 10.0}
    )
    now = [1000.0]
    scheduler = Scheduler(settings, client, clock=lambda: now[0])
    await scheduler.start()
    try:
        await cloud.host("h")
        await scheduler.schedule(one())
        assert not scheduler.host_cache.live
        assert scheduler.feed.index is None
        now[0] += 11.0
        await scheduler.schedule(one())
        assert gate.requests["candidates"] == 2
    finally:
        await scheduler.aclose()
        await client.aclose()
