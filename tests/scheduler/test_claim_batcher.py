"""The claim batcher against a real Placement (SQLite and PostgreSQL): claims decided
while a write is outstanding go together in one POST /allocations; a refused batch
leaves nothing written and each claim is sent again on its own; multi-instance
entries stay all or nothing; a cancelled caller's claim is dropped when unsent and
waited for when in flight."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from placement_client import PlacementError
from scheduler.claiming.claim_batcher import ClaimBatcher
from scheduler.deciding.engine import Scheduler
from scheduler.placement.client import AllocationRequest, ClaimOutcome, NewClaim, SchedulerPlacement
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import Cloud, new_uuid, scheduler_placement, transport_of

SIZE = {"VCPU": 1, "MEMORY_MB": 512}


class GatedTransport(httpx.AsyncHTTPTransport):
    """Real HTTP; records every write (method and consumers named) and, while the gate
    is closed, holds writes back before they reach Placement."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.held = 0
        self.answered = 0  # writes Placement has answered
        self.arrived = asyncio.Event()
        self.writes: list[tuple[str, list[str]]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method in ("PUT", "POST"):
            body = json.loads(request.content)
            consumers = (
                list(body) if request.method == "POST" else [request.url.path.rsplit("/")[-1]]
            )
            self.writes.append((request.method, consumers))
            self.held += 1
            self.arrived.set()
            await self.gate.wait()
            self.held -= 1
        response = await super().handle_async_request(request)
        if request.method in ("PUT", "POST"):
            self.answered += 1
            self.arrived.set()
        return response

    async def until_held(self, count: int) -> None:
        while self.held < count:
            self.arrived.clear()
            await self.arrived.wait()

    async def until_answered(self, count: int) -> None:
        while self.answered < count:
            self.arrived.clear()
            await self.arrived.wait()


@pytest.fixture
async def gated(scheduler_settings: SchedulerSettings) -> AsyncIterator[SchedulerPlacement]:
    client = scheduler_placement(scheduler_settings.api_url, GatedTransport())
    yield client
    await client.aclose()


def transport(client: SchedulerPlacement) -> GatedTransport:
    found = transport_of(client)
    assert isinstance(found, GatedTransport)
    return found


def batcher(client: SchedulerPlacement, max_claims: int = 50) -> ClaimBatcher:
    return ClaimBatcher(client, consumer_type="INSTANCE", max_claims=max_claims, in_flight=1)


def on(rp: str, consumer: str | None = None, size: dict[str, int] = SIZE) -> NewClaim:
    request = AllocationRequest.model_validate({"allocations": {rp: {"resources": size}}})
    return NewClaim(consumer or new_uuid(), request, "project", "user")


async def claim_behind_a_held_write(
    client: SchedulerPlacement, writer: ClaimBatcher, entries: list[list[NewClaim]], rp: str
) -> tuple[ClaimOutcome, list[ClaimOutcome | BaseException]]:
    """Hold a first claim's write at the gate, queue ``entries`` behind it, then let go."""
    gate = transport(client)
    gate.gate.clear()
    first = asyncio.create_task(writer.claim([on(rp)]))
    await gate.until_held(1)
    queued = [asyncio.create_task(writer.claim(entry)) for entry in entries]
    await asyncio.sleep(0.05)
    assert len(gate.writes) == 1  # the others wait for the write in flight
    gate.gate.set()
    outcomes = await asyncio.gather(*queued, return_exceptions=True)
    return await first, outcomes


async def test_claims_queued_behind_a_write_go_together_in_one_post(
    cloud: Cloud, gated: SchedulerPlacement
) -> None:
    rp = await cloud.host("roomy")
    entries = [[on(rp)] for _ in range(3)]
    first, outcomes = await claim_behind_a_held_write(gated, batcher(gated), entries, rp)
    assert first == ClaimOutcome(claimed=True, written_with=1)
    assert outcomes == [ClaimOutcome(claimed=True, written_with=3)] * 3
    consumers = [entry[0].consumer for entry in entries]
    assert transport(gated).writes[1] == ("POST", consumers)
    for consumer in consumers:
        assert await cloud.allocations(consumer) == {rp: SIZE}
    assert (await cloud.usages(rp))["VCPU"] == 4


async def test_a_refused_batch_writes_nothing_and_each_claim_is_sent_alone(
    cloud: Cloud, gated: SchedulerPlacement
) -> None:
    roomy = await cloud.host("roomy")
    tight = await cloud.host("tight", vcpu=1)
    await cloud.allocate(new_uuid(), tight, {"VCPU": 1})  # full: this claim cannot fit
    entries = [[on(roomy)], [on(tight)], [on(roomy)]]
    _, outcomes = await claim_behind_a_held_write(gated, batcher(gated), entries, roomy)
    fits, refused, also_fits = outcomes
    assert isinstance(fits, ClaimOutcome)
    assert isinstance(refused, ClaimOutcome)
    assert fits.claimed
    assert also_fits == fits
    assert fits.written_with == 1
    assert fits.batch_refused.startswith("3 claims sent together were refused")
    assert not refused.claimed
    assert "capacity" in refused.detail
    methods = [method for method, _ in transport(gated).writes]
    assert methods == ["PUT", "POST", "PUT", "PUT", "PUT"]
    assert await cloud.allocations(entries[1][0].consumer) == {}
    assert (await cloud.usages(roomy))["VCPU"] == 3
    await cloud.assert_within_capacity(tight)


async def test_a_multi_instance_entry_stays_all_or_nothing_in_a_refused_batch(
    cloud: Cloud, gated: SchedulerPlacement
) -> None:
    roomy = await cloud.host("roomy")
    tight = await cloud.host("tight", vcpu=1)
    together = [on(roomy), on(tight, size={"VCPU": 2, "MEMORY_MB": 512})]
    alone = [on(roomy)]
    _, (group, single) = await claim_behind_a_held_write(
        gated, batcher(gated), [together, alone], roomy
    )
    assert isinstance(group, ClaimOutcome)
    assert not group.claimed
    assert group.written_with == 2
    assert single == ClaimOutcome(claimed=True, written_with=1, batch_refused=group.batch_refused)
    assert transport(gated).writes[2:] == [
        ("POST", [c.consumer for c in together]),
        ("PUT", [alone[0].consumer]),
    ] or transport(gated).writes[2:] == [
        ("PUT", [alone[0].consumer]),
        ("POST", [c.consumer for c in together]),
    ]
    for claim in together:
        assert await cloud.allocations(claim.consumer) == {}


async def test_a_claim_naming_an_unknown_provider_fails_alone(
    cloud: Cloud, gated: SchedulerPlacement
) -> None:
    rp = await cloud.host("roomy")
    entries = [[on(rp)], [on(new_uuid())]]
    _, (fine, unknown) = await claim_behind_a_held_write(gated, batcher(gated), entries, rp)
    assert isinstance(fine, ClaimOutcome)
    assert fine.claimed
    assert isinstance(unknown, PlacementError)
    assert unknown.status == 400
    assert await cloud.allocations(entries[0][0].consumer) == {rp: SIZE}


async def test_batches_hold_at_most_max_claims(cloud: Cloud, gated: SchedulerPlacement) -> None:
    rp = await cloud.host("roomy")
    entries = [[on(rp)] for _ in range(5)]
    await claim_behind_a_held_write(gated, batcher(gated, max_claims=2), entries, rp)
    assert [len(consumers) for _, consumers in transport(gated).writes] == [1, 2, 2, 1]
    assert (await cloud.usages(rp))["VCPU"] == 6


async def test_with_batches_of_one_nothing_waits(cloud: Cloud, gated: SchedulerPlacement) -> None:
    rp = await cloud.host("roomy")
    gate = transport(gated)
    gate.gate.clear()
    writer = batcher(gated, max_claims=1)
    claims = [asyncio.create_task(writer.claim([on(rp)])) for _ in range(3)]
    await gate.until_held(3)  # all three are sent without waiting for each other
    gate.gate.set()
    assert all(outcome.claimed for outcome in await asyncio.gather(*claims))


async def test_a_cancelled_claim_that_was_not_sent_is_never_written(
    cloud: Cloud, gated: SchedulerPlacement
) -> None:
    rp = await cloud.host("roomy")
    gate = transport(gated)
    gate.gate.clear()
    writer = batcher(gated)
    first = asyncio.create_task(writer.claim([on(rp)]))
    await gate.until_held(1)
    dropped = on(rp)
    waiting = asyncio.create_task(writer.claim([dropped]))
    await asyncio.sleep(0.01)
    waiting.cancel()
    gate.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (await first).claimed
    assert [consumers for _, consumers in gate.writes] == [[first_consumer(gate)]]
    assert await cloud.allocations(dropped.consumer) == {}


def first_consumer(gate: GatedTransport) -> str:
    return gate.writes[0][1][0]


async def test_a_cancelled_claim_in_flight_waits_for_placements_answer(
    cloud: Cloud, gated: SchedulerPlacement
) -> None:
    rp = await cloud.host("roomy")
    gate = transport(gated)
    gate.gate.clear()
    claim = on(rp)
    task = asyncio.create_task(batcher(gated).claim([claim]))
    await gate.until_held(1)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done()  # still waiting: the write may yet succeed
    gate.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Written after all: whoever cancelled gives it back now, not before it landed.
    assert await cloud.allocations(claim.consumer) == {rp: SIZE}


async def test_a_request_cancelled_while_its_claim_is_written_ends_holding_nothing(
    cloud: Cloud, gated: SchedulerPlacement, scheduler_settings: SchedulerSettings
) -> None:
    await cloud.host("roomy")
    scheduler = Scheduler(scheduler_settings, gated)
    spec = ScheduleRequest.model_validate({"resources": SIZE})
    gate = transport(gated)
    gate.gate.clear()
    request = asyncio.create_task(scheduler.schedule(spec))
    await gate.until_held(1)
    request.cancel()
    await asyncio.sleep(0.05)
    gate.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert [method for method, _ in gate.writes] == ["PUT"]
    await gate.until_answered(1)
    # The claim landed after the cancellation; it was given back after it landed.
    assert await cloud.allocations(str(spec.consumer_uuids[0])) == {}
