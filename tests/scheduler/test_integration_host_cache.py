"""The host cache against a real Placement server (SQLite and PostgreSQL): cached
answers serve later requests, a stale cache costs a refused claim and a move to
the next host but never an overcommit, answers are read again after their TTL,
and no request is refused on cached state alone."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest

from scheduler.answers.results import ScheduleResponse
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError
from scheduler.placement.client import SchedulerPlacement
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import Cloud, new_uuid, scheduler_placement, transport_of

FLAVOR = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
TTL = 30.0


class CountingTransport(httpx.AsyncHTTPTransport):
    """Real HTTP; counts the candidates reads (not the ``limit=1`` probes of a diagnosis)
    and the writes."""

    def __init__(self) -> None:
        super().__init__()
        self.candidate_reads = 0
        self.writes: Counter[tuple[str, str]] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.path == "/allocation_candidates" and url.params.get("limit") != "1":
            self.candidate_reads += 1
        if request.method != "GET":
            self.writes[(request.method, url.path)] += 1
        return await super().handle_async_request(request)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def counted(
    scheduler_settings: SchedulerSettings,
) -> AsyncIterator[tuple[SchedulerPlacement, Clock]]:
    transport = CountingTransport()
    client = scheduler_placement(scheduler_settings.api_url, transport)
    yield client, Clock()
    await client.aclose()


def cached_scheduler(
    settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> Scheduler:
    client, clock = counted
    settings = settings.model_copy(update={"host_cache_seconds": TTL})
    return Scheduler(settings, client, clock=clock)


def reads(scheduler: Scheduler) -> int:
    transport = transport_of(scheduler.client)
    assert isinstance(transport, CountingTransport)
    return transport.candidate_reads


def one() -> ScheduleRequest:
    return ScheduleRequest.model_validate({"resources": FLAVOR})


def age(result: ScheduleResponse | NoValidHostError) -> float | None:
    placement = result.explanation.placement
    assert placement is not None
    return placement.cache_age_seconds


async def test_requests_of_one_shape_share_a_read_until_it_is_older_than_the_ttl(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    await cloud.host("first", memory_mb=8192)
    scheduler = cached_scheduler(scheduler_settings, counted)
    clock = counted[1]
    first = await scheduler.schedule(one())
    clock.now += TTL / 2
    roomy = await cloud.host("roomy", memory_mb=65536)  # not in the cached answer yet
    second = await scheduler.schedule(one())
    assert reads(scheduler) == 1
    assert (age(first), age(second)) == (None, TTL / 2)
    assert second.selections[0].provider.name == "first"
    clock.now += TTL
    third = await scheduler.schedule(one())
    assert reads(scheduler) == 2
    assert age(third) is None
    assert third.selections[0].provider.uuid == roomy


async def test_each_request_shape_has_its_own_answer(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    await cloud.host("h", vcpu=64, memory_mb=65536)
    scheduler = cached_scheduler(scheduler_settings, counted)
    for vcpu in (2, 4, 2, 4):
        await scheduler.schedule(
            ScheduleRequest.model_validate({"resources": FLAVOR | {"VCPU": vcpu}})
        )
    assert reads(scheduler) == 2


async def test_a_stale_cache_loses_the_claim_moves_on_and_never_overcommits(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    big = await cloud.host("big", vcpu=4, memory_mb=65536)
    small = await cloud.host("small", vcpu=2, memory_mb=8192)
    scheduler = cached_scheduler(scheduler_settings, counted)
    first = await scheduler.schedule(one())
    assert first.selections[0].provider.uuid == big
    await cloud.allocate(new_uuid(), big, {"VCPU": 2})  # another scheduler fills big
    consumer = new_uuid()
    second = await scheduler.schedule(ScheduleRequest.model_validate(
        {"resources": FLAVOR, "consumer_uuids": [consumer]}
    ))  # fmt: skip
    assert age(second) is not None  # decided on the cached answer
    claims = second.explanation.instances[0].claims
    assert [(a.host, a.outcome) for a in claims] == [("big", "conflict"), ("small", "claimed")]
    assert await cloud.allocations(consumer) == {small: FLAVOR}
    with pytest.raises(NoValidHostError) as refused:
        await scheduler.schedule(one())  # the refusal marked the answer stale
    assert age(refused.value) is None
    assert refused.value.explanation.failure is not None
    assert refused.value.explanation.failure.stage == "placement"
    assert refused.value.explanation.instances == []  # no claim tried on the stale host
    assert reads(scheduler) == 2
    for rp in (big, small):
        await cloud.assert_within_capacity(rp)
    assert (await cloud.usages(big))["VCPU"] == 4
    assert (await cloud.usages(small))["VCPU"] == 2


async def test_a_request_the_cache_cannot_place_is_decided_again_on_a_fresh_read(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    rp = await cloud.host("only", vcpu=2)
    scheduler = cached_scheduler(scheduler_settings, counted)
    placed = await scheduler.schedule(one())
    released = placed.selections[0].consumer_uuid
    # Given back behind this scheduler's back: its cache still sees the host full.
    response = await cloud.http.delete(
        f"/allocations/{released}", headers={"x-auth-token": "admin"}
    )
    assert response.status_code == 204
    again = await scheduler.schedule(one())
    assert again.selections[0].provider.uuid == rp
    assert age(again) is None
    assert reads(scheduler) == 2
    assert again.explanation.instances[0].hosts_with_room == 1


async def test_instances_of_a_request_and_later_requests_see_cached_consumption(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    hosts = {await cloud.host(f"h{i}", vcpu=4) for i in range(2)}
    scheduler = cached_scheduler(scheduler_settings, counted)
    first = await scheduler.schedule(ScheduleRequest.model_validate(
        {"resources": FLAVOR, "num_instances": 3}
    ))  # fmt: skip
    second = await scheduler.schedule(one())
    placed = [s.provider.uuid for s in first.selections + second.selections]
    assert Counter(placed) == dict.fromkeys(hosts, 2)
    assert reads(scheduler) == 1
    assert all(a.outcome == "claimed" for i in second.explanation.instances for a in i.claims)
    with pytest.raises(NoValidHostError):
        await scheduler.schedule(one())
    for rp in hosts:
        await cloud.assert_within_capacity(rp)


async def test_concurrent_requests_sharing_one_cache_never_overcommit(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    hosts = [await cloud.host(f"h{i}", vcpu=4) for i in range(3)]  # room for 6 instances
    scheduler = cached_scheduler(scheduler_settings, counted)

    async def attempt() -> str | None:
        try:
            return (await scheduler.schedule(one())).selections[0].consumer_uuid
        except NoValidHostError:
            return None

    outcomes = await asyncio.gather(*(attempt() for _ in range(10)))
    placed = [consumer for consumer in outcomes if consumer is not None]
    assert len(placed) == 6
    total = 0
    for rp in hosts:
        await cloud.assert_within_capacity(rp)
        total += (await cloud.usages(rp))["VCPU"]
    assert total == 2 * len(placed)
    for consumer in placed:
        assert list((await cloud.allocations(consumer)).values()) == [FLAVOR]


async def test_a_claim_refused_for_its_consumer_gives_back_its_reservation(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    elsewhere = await cloud.host("elsewhere", vcpu=2)
    taken = new_uuid()
    await cloud.allocate(taken, elsewhere, {"VCPU": 2})  # the consumer exists already
    only = await cloud.host("only", vcpu=2)
    scheduler = cached_scheduler(scheduler_settings, counted)
    with pytest.raises(NoValidHostError) as refused:
        await scheduler.schedule(ScheduleRequest.model_validate(
            {"resources": FLAVOR, "consumer_uuids": [taken]}
        ))  # fmt: skip
    (attempt,) = refused.value.explanation.instances[0].claims
    assert (attempt.host, attempt.outcome) == ("only", "conflict")
    # The host was not full: the cached answer still offers all of it.
    placed = await scheduler.schedule(one())
    assert placed.selections[0].provider.uuid == only
    assert age(placed) is not None
    assert reads(scheduler) == 1


async def test_the_instances_of_a_request_are_claimed_in_one_write(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    hosts = [await cloud.host(f"h{i}", vcpu=4) for i in range(2)]
    scheduler = cached_scheduler(scheduler_settings, counted)
    transport = transport_of(scheduler.client)
    assert isinstance(transport, CountingTransport)
    result = await scheduler.schedule(ScheduleRequest.model_validate(
        {"resources": FLAVOR, "num_instances": 4}
    ))  # fmt: skip
    assert transport.writes == {("POST", "/allocations"): 1}
    for selection in result.selections:
        assert await cloud.allocations(selection.consumer_uuid) == {selection.provider.uuid: FLAVOR}
    for rp in hosts:
        assert (await cloud.usages(rp))["VCPU"] == 4


async def test_claims_made_together_and_refused_are_made_again_one_by_one(
    cloud: Cloud, scheduler_settings: SchedulerSettings, counted: tuple[SchedulerPlacement, Clock]
) -> None:
    big = await cloud.host("big", vcpu=8, memory_mb=65536, disk_gb=1000)
    smalls = {await cloud.host(f"small{i}", vcpu=4, memory_mb=8192) for i in range(2)}
    scheduler = cached_scheduler(scheduler_settings, counted)
    await scheduler.schedule(one())  # on big, which another scheduler then fills
    await cloud.allocate(new_uuid(), big, {"VCPU": 6})
    result = await scheduler.schedule(ScheduleRequest.model_validate(
        {"resources": FLAVOR, "num_instances": 2}
    ))  # fmt: skip
    first = result.explanation.instances[0].claims
    assert [(a.host, a.outcome) for a in first[:2]] == [("big", "conflict"), ("big", "conflict")]
    assert first[0].detail.startswith("refused with the request's other instances")
    assert first[-1].outcome == "claimed"
    assert {s.provider.uuid for s in result.selections} <= smalls
    await cloud.assert_within_capacity(big)
    for selection in result.selections:
        assert await cloud.allocations(selection.consumer_uuid) == {selection.provider.uuid: FLAVOR}
