"""The scheduler against a real Placement server (SQLite and PostgreSQL).

Each test builds hosts through the API, schedules, and then reads back from
Placement what was written.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from flavors.aggregates import AggregateConfig
from placement_client import PlacementError
from scheduler.claiming.claim import Claimer
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError, PlacementRejectedError
from scheduler.placement.client import CandidatesResponse
from scheduler.placement.host_state import HostMetadata, build_hosts
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import Cloud, new_uuid, scheduler_placement

FLAVOR = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}


def spec(**fields: object) -> ScheduleRequest:
    return ScheduleRequest.model_validate({"resources": FLAVOR, **fields})


def group(policy: str, name: str = "web") -> dict[str, object]:
    return {"uuid": str(uuid.uuid4()), "policy": policy, "name": name}


async def test_places_on_the_roomiest_host_and_writes_exactly_its_allocation(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("small", memory_mb=8192)
    big = await cloud.host("big", memory_mb=65536)
    consumer = new_uuid()
    result = await make_scheduler().schedule(
        spec(consumer_uuids=[consumer], project_id="p1", user_id="u1")
    )
    (selection,) = result.selections
    assert (selection.provider.name, selection.provider.uuid) == ("big", big)
    assert await cloud.allocations(consumer) == {big: FLAVOR}
    explanation = result.explanation
    assert explanation.placement is not None
    assert explanation.placement.hosts == 2
    assert explanation.placement.request.query.startswith("resources=DISK_GB:40,MEMORY_MB:4096")
    chosen = explanation.instances[0].chosen
    assert chosen is not None
    assert chosen.host == "big"
    assert {t.weigher for t in chosen.terms} >= {"ram", "cpu", "disk"}


async def test_later_instances_see_what_earlier_ones_consumed(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    hosts = {await cloud.host(f"host-{i}", vcpu=2, memory_mb=4096) for i in range(3)}
    result = await make_scheduler().schedule(spec(num_instances=3))
    assert {s.provider.uuid for s in result.selections} == hosts
    last = result.explanation.instances[2]
    assert (last.hosts_considered, last.hosts_with_room) == (3, 1)
    assert "VCPU needs 2, 0 left" in last.capacity_rejected[0].reason
    for rp in hosts:
        await cloud.assert_within_capacity(rp)


async def test_anti_affinity_spreads_and_a_failed_instance_releases_the_others(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    hosts = [await cloud.host(f"host-{i}") for i in range(3)]
    consumers = [new_uuid() for _ in range(4)]
    with pytest.raises(NoValidHostError) as caught:
        await make_scheduler().schedule(
            spec(consumer_uuids=consumers, hints={"group": group("anti-affinity")})
        )
    explanation = caught.value.explanation
    failure = explanation.failure
    assert failure is not None
    assert (failure.stage, failure.instance_index) == ("filter", 3)
    assert "server_group_anti_affinity removed the last 3 host(s)" in failure.reason
    assert "anti-affinity: group web already on host-" in failure.reason
    assert sorted(explanation.released) == sorted(consumers[:3])
    assert "instance 4 of 4" in caught.value.message
    for consumer in consumers:
        assert await cloud.allocations(consumer) == {}
    for rp in hosts:
        assert not any((await cloud.usages(rp)).values())


async def test_anti_affinity_counts_members_the_caller_names(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    taken = await cloud.host("taken")
    free = await cloud.host("free", memory_mb=8192)
    member = new_uuid()
    await cloud.allocate(member, taken, {"VCPU": 1})
    hint = group("anti-affinity") | {"members": [member]}
    result = await make_scheduler().schedule(spec(hints={"group": hint}))
    assert result.selections[0].provider.uuid == free
    report = next(
        f for f in result.explanation.instances[0].filters if f.name == "server_group_anti_affinity"
    )
    assert [r.reason for r in report.rejected] == ["anti-affinity: group web already on taken"]


async def test_affinity_keeps_every_instance_on_the_first_host(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    for i in range(3):
        await cloud.host(f"host-{i}")
    result = await make_scheduler().schedule(
        spec(num_instances=3, hints={"group": group("affinity")})
    )
    assert len({s.provider.uuid for s in result.selections}) == 1


async def test_the_group_is_remembered_between_requests(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    for i in range(2):
        await cloud.host(f"host-{i}")
    scheduler = make_scheduler()
    hint = group("anti-affinity")
    first = await scheduler.schedule(spec(hints={"group": hint}))
    second = await scheduler.schedule(spec(hints={"group": hint}))
    assert first.selections[0].provider.uuid != second.selections[0].provider.uuid
    with pytest.raises(NoValidHostError):
        await scheduler.schedule(spec(hints={"group": hint}))
    await scheduler.release([first.selections[0].consumer_uuid])
    third = await scheduler.schedule(spec(hints={"group": hint}))
    assert third.selections[0].provider.uuid == first.selections[0].provider.uuid


async def test_no_candidates_names_placement_the_query_and_the_missing_amount(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("only", memory_mb=8192)
    with pytest.raises(NoValidHostError) as caught:
        await make_scheduler().schedule(
            ScheduleRequest.model_validate({"resources": {"VCPU": 1, "MEMORY_MB": 100000}})
        )
    explanation = caught.value.explanation
    assert explanation.failure is not None
    assert explanation.failure.stage == "placement"
    assert explanation.placement is not None
    assert explanation.placement.request.query == "resources=MEMORY_MB:100000,VCPU:1&limit=1000"
    assert explanation.placement.diagnosis == ["no provider has 100000 MEMORY_MB free"]
    assert "GET /allocation_candidates?resources=MEMORY_MB:100000" in caught.value.message


async def test_no_candidates_diagnosis_names_a_missing_required_trait(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("plain")
    with pytest.raises(NoValidHostError) as caught:
        await make_scheduler().schedule(spec(required_traits=["HW_CPU_X86_AVX512F"]))
    assert caught.value.explanation.placement is not None
    assert caught.value.explanation.placement.diagnosis == [
        "no provider with room for DISK_GB:40,MEMORY_MB:4096,VCPU:2 has trait HW_CPU_X86_AVX512F"
    ]


async def test_forced_host_skips_filters_but_still_claims(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("enabled", memory_mb=65536)
    disabled = await cloud.host("disabled", traits=("COMPUTE_STATUS_DISABLED",))
    consumer = new_uuid()
    result = await make_scheduler().schedule(
        spec(consumer_uuids=[consumer], hints={"force_hosts": ["disabled"]})
    )
    assert result.selections[0].provider.uuid == disabled
    assert await cloud.allocations(consumer) == {disabled: FLAVOR}
    assert result.explanation.placement is not None
    assert f"in_tree={disabled}" in result.explanation.placement.request.query


async def test_forced_host_without_room_fails_with_a_clear_reason(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("roomy")
    await cloud.host("tiny", vcpu=1)
    with pytest.raises(NoValidHostError) as caught:
        await make_scheduler().schedule(spec(hints={"force_hosts": ["tiny"]}))
    assert "the forced host tiny has no room" in caught.value.message
    with pytest.raises(NoValidHostError, match="forced host ghost is not a resource provider"):
        await make_scheduler().schedule(spec(hints={"force_hosts": ["ghost"]}))


async def test_a_lost_claim_moves_to_the_next_host(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    first = await cloud.host("first", vcpu=2)
    second = await cloud.host("second", vcpu=2)
    scheduler = make_scheduler()
    response = await scheduler.client.allocation_candidates([("resources", "VCPU:2")])
    stale = build_hosts(
        CandidatesResponse.model_validate(response.model_dump()),
        {first: HostMetadata(name="first"), second: HostMetadata(name="second")},
    )
    stale.sort(key=lambda host: host.uuid != first)
    await cloud.allocate(new_uuid(), first, {"VCPU": 2})  # another writer fills it
    consumer = new_uuid()
    claimer = Claimer(scheduler.client, scheduler.claims, attempts=3)
    result = await claimer.claim(consumer, stale, project_id="p", user_id="u")
    assert [(a.host, a.outcome) for a in result.attempts] == [
        ("first", "conflict"),
        ("second", "claimed"),
    ]
    assert result.attempts[0].detail
    assert await cloud.allocations(consumer) == {second: {"VCPU": 2}}
    await cloud.assert_within_capacity(first)


async def test_claims_are_bounded_by_claim_attempts(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    hosts = [await cloud.host(f"h{i}", vcpu=1) for i in range(3)]
    scheduler = make_scheduler()
    response = await scheduler.client.allocation_candidates([("resources", "VCPU:1")])
    stale = build_hosts(response, {})
    for rp in hosts:
        await cloud.allocate(new_uuid(), rp, {"VCPU": 1})
    result = await Claimer(scheduler.client, scheduler.claims, attempts=2).claim(
        new_uuid(), stale, project_id="p", user_id="u"
    )
    assert result.host is None
    assert [a.outcome for a in result.attempts] == ["conflict", "conflict"]


async def test_same_and_different_host_follow_other_consumers(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    one = await cloud.host("one", memory_mb=8192)
    two = await cloud.host("two", memory_mb=65536)
    neighbour = new_uuid()
    await cloud.allocate(neighbour, one, {"VCPU": 1})
    scheduler = make_scheduler()
    near = await scheduler.schedule(spec(hints={"same_host": [neighbour]}))
    assert near.selections[0].provider.uuid == one
    far = await scheduler.schedule(
        spec(hints={"different_host": [neighbour, near.selections[0].consumer_uuid]})
    )
    assert far.selections[0].provider.uuid == two


async def test_availability_zone_comes_from_configured_aggregates(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    zone = str(uuid.uuid4())
    inside = await cloud.host("inside", memory_mb=8192, aggregates=(zone,))
    await cloud.host("outside", memory_mb=65536)
    scheduler = make_scheduler(
        aggregates={zone: AggregateConfig(availability_zone="az1", metadata={"storage": "ssd"})}
    )
    result = await scheduler.schedule(spec(availability_zone="az1"))
    assert result.selections[0].provider.uuid == inside
    placement = result.explanation.placement
    assert placement is not None
    assert f"member_of={zone}" in placement.request.query
    assert placement.narrowed_by == [f"availability zone az1: member_of=in:{zone}"]
    flavored = ScheduleRequest.model_validate(
        {
            "flavor": {"vcpus": 1, "memory_mb": 512, "extra_specs": {"storage": "ssd"}},
        }
    )
    assert (await scheduler.schedule(flavored)).selections[0].provider.uuid == inside


async def test_alternates_come_with_their_allocation_requests(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    hosts = {await cloud.host(f"h{i}", memory_mb=8192 * (i + 1)) for i in range(4)}
    result = await make_scheduler(max_attempts=3).schedule(spec())
    (selection,) = result.selections
    assert len(selection.alternates) == 2
    alternate_hosts = {a.provider.uuid for a in selection.alternates}
    assert selection.provider.uuid not in alternate_hosts
    assert alternate_hosts < hosts
    for alternate in selection.alternates:
        assert set(alternate.allocation_request.allocations) == {alternate.provider.uuid}
        resources = alternate.allocation_request.allocations[alternate.provider.uuid].resources
        assert resources == FLAVOR


async def test_instance_counts_are_read_from_placement_when_a_filter_needs_them(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    busy = await cloud.host("busy", memory_mb=65536)
    quiet = await cloud.host("quiet", memory_mb=8192)
    for _ in range(2):
        await cloud.allocate(new_uuid(), busy, {"VCPU": 1})
    scheduler = make_scheduler(enabled_filters=["max_instances_per_host"], max_instances_per_host=2)
    result = await scheduler.schedule(spec(num_instances=2))
    assert [s.provider.uuid for s in result.selections] == [quiet, quiet]
    with pytest.raises(NoValidHostError, match="max instances: 2 on host, limit is 2"):
        await scheduler.schedule(spec())


async def test_release_gives_back_the_claims(cloud: Cloud, make_scheduler: MakeScheduler) -> None:
    rp = await cloud.host("h")
    scheduler = make_scheduler()
    result = await scheduler.schedule(spec(num_instances=2))
    consumers = [s.consumer_uuid for s in result.selections]
    released = await scheduler.release([*consumers, new_uuid()])
    assert sorted(released.released) == sorted(consumers)
    assert len(released.not_found) == 1
    assert not any((await cloud.usages(rp)).values())


async def test_a_query_placement_rejects_is_reported_as_an_invalid_request(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("h")
    with pytest.raises(PlacementRejectedError):
        await make_scheduler().schedule(
            ScheduleRequest.model_validate({"resources": {"CUSTOM_NOT_DEFINED": 1}})
        )


class AnswerLostTransport(httpx.AsyncHTTPTransport):
    """Real HTTP, except that the answer to the n-th claim is lost after Placement wrote it."""

    def __init__(self, lose_claim: int) -> None:
        super().__init__()
        self.claims = 0
        self.lose_claim = lose_claim

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        if request.method in ("PUT", "POST") and request.url.path.startswith("/allocations"):
            self.claims += 1
            if self.claims == self.lose_claim:
                await response.aclose()
                raise httpx.ReadError("connection reset before the answer", request=request)
        return response


async def test_a_lost_answer_to_the_claims_made_together_releases_all_of_them(
    cloud: Cloud, scheduler_settings: SchedulerSettings
) -> None:
    hosts = [await cloud.host(f"h{i}") for i in range(3)]
    transport = AnswerLostTransport(lose_claim=1)
    client = scheduler_placement(scheduler_settings.api_url, transport)
    consumers = [new_uuid() for _ in range(3)]
    try:
        with pytest.raises(PlacementError, match="connection reset"):
            await Scheduler(scheduler_settings, client).schedule(spec(consumer_uuids=consumers))
    finally:
        await client.aclose()
    assert transport.claims == 1  # one POST /allocations for the three
    for consumer in consumers:
        assert await cloud.allocations(consumer) == {}
    for rp in hosts:
        assert not any((await cloud.usages(rp)).values())


async def test_a_placement_failure_mid_request_releases_every_claim_even_the_unanswered_one(
    cloud: Cloud, scheduler_settings: SchedulerSettings
) -> None:
    hosts = [await cloud.host(f"h{i}") for i in range(3)]
    someone_elses = new_uuid()
    await cloud.allocate(someone_elses, hosts[0], {"VCPU": 1})
    # Claiming together is refused (that consumer exists), so the instances are then
    # claimed one by one: the POST, the first PUT, and the lost answer to the second.
    transport = AnswerLostTransport(lose_claim=3)
    client = scheduler_placement(scheduler_settings.api_url, transport)
    consumers = [new_uuid(), new_uuid(), someone_elses]
    try:
        with pytest.raises(PlacementError, match="connection reset"):
            await Scheduler(scheduler_settings, client).schedule(spec(consumer_uuids=consumers))
    finally:
        await client.aclose()
    assert transport.claims == 3
    for consumer in consumers[:2]:
        assert await cloud.allocations(consumer) == {}
    assert await cloud.allocations(someone_elses) == {hosts[0]: {"VCPU": 1}}
    usages = [await cloud.usages(rp) for rp in hosts]
    assert sum(usage.get("VCPU", 0) for usage in usages) == 1
