"""Racing schedulers against one real Placement: no overcommit, exact accounting,
and all-or-nothing multi-instance requests.

Each scheduler has its own client and its own (soon stale) view of the
candidates, as separate scheduler processes would; they all pick the same
best host first (``host_subset_size`` 1), so claims collide.
"""

from __future__ import annotations

import asyncio

from scheduler.answers.results import ScheduleResponse
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError
from scheduler.request.spec import ScheduleRequest
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import Cloud

INSTANCE = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
HOSTS = 4
PER_HOST = 2  # each host has room for exactly two instances


async def _hosts(cloud: Cloud) -> list[str]:
    return [
        await cloud.host(f"race-{i}", vcpu=2 * PER_HOST, memory_mb=2048 * PER_HOST, disk_gb=100)
        for i in range(HOSTS)
    ]


async def _run(
    scheduler: Scheduler, requests: int, instances: int
) -> tuple[list[list[str]], list[str]]:
    """Consumers of each placed request, and the stages that stopped the others.
    A request that failed must hold nothing."""
    placed: list[list[str]] = []
    failed: list[str] = []
    for _ in range(requests):
        spec = ScheduleRequest.model_validate({"resources": INSTANCE, "num_instances": instances})
        refused: NoValidHostError | None = None
        try:
            result = await scheduler.schedule(spec)
        except NoValidHostError as exc:
            refused = exc
        if refused is None:
            placed.append([s.consumer_uuid for s in result.selections])
            continue
        assert refused.explanation.failure is not None
        failed.append(refused.explanation.failure.stage)
        for consumer in spec.consumer_uuids:
            assert await _held(scheduler, str(consumer)) == {}
    return placed, failed


async def _held(scheduler: Scheduler, consumer: str) -> dict[str, dict[str, int]]:
    return await scheduler.client.consumer_allocations(consumer)


async def _assert_exact_accounting(cloud: Cloud, hosts: list[str], placed: list[str]) -> None:
    total_vcpu = 0
    for rp in hosts:
        await cloud.assert_within_capacity(rp)
        total_vcpu += (await cloud.usages(rp)).get("VCPU", 0)
    assert total_vcpu == INSTANCE["VCPU"] * len(placed)
    for consumer in placed:
        allocations = await cloud.allocations(consumer)
        assert len(allocations) == 1
        assert next(iter(allocations.values())) == INSTANCE


async def test_racing_schedulers_never_overcommit_a_host(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    hosts = await _hosts(cloud)
    schedulers = [make_scheduler(host_subset_size=1, claim_attempts=HOSTS) for _ in range(4)]
    outcomes = await asyncio.gather(*(_run(s, requests=4, instances=1) for s in schedulers))
    placed = [c for requests, _ in outcomes for consumers in requests for c in consumers]
    failures = [stage for _, stages in outcomes for stage in stages]
    assert len(placed) <= HOSTS * PER_HOST
    assert len(placed) + len(failures) == 16
    assert set(failures) <= {"placement", "capacity", "claim"}
    await _assert_exact_accounting(cloud, hosts, placed)


async def test_racing_multi_instance_requests_are_all_or_nothing(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    hosts = await _hosts(cloud)
    schedulers = [make_scheduler(host_subset_size=1, claim_attempts=HOSTS) for _ in range(3)]
    outcomes = await asyncio.gather(*(_run(s, requests=2, instances=3) for s in schedulers))
    requests = [consumers for placed, _ in outcomes for consumers in placed]
    assert all(len(consumers) == 3 for consumers in requests)
    assert len(requests) <= (HOSTS * PER_HOST) // 3
    assert any(failed for _, failed in outcomes)  # 6 requests of 3 cannot all fit in 8
    await _assert_exact_accounting(cloud, hosts, [c for r in requests for c in r])


async def _schedule_all(
    scheduler: Scheduler, specs: list[ScheduleRequest]
) -> list[ScheduleResponse | NoValidHostError]:
    async def one(spec: ScheduleRequest) -> ScheduleResponse | NoValidHostError:
        try:
            return await scheduler.schedule(spec)
        except NoValidHostError as exc:
            return exc

    return list(await asyncio.gather(*(one(spec) for spec in specs)))


async def test_batched_claims_of_concurrent_requests_never_overcommit(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    """Many requests at once to one scheduler (its claims go together in POST
    /allocations, and batches get refused when a host filled up), racing another
    scheduler: still no overcommit, exact accounting, all or nothing per request."""
    hosts = await _hosts(cloud)
    shared = make_scheduler(host_subset_size=1, claim_attempts=HOSTS)
    other = make_scheduler(host_subset_size=1, claim_attempts=HOSTS)

    def specs(instances: list[int]) -> list[ScheduleRequest]:
        return [
            ScheduleRequest.model_validate({"resources": INSTANCE, "num_instances": n})
            for n in instances
        ]

    batched, racing = specs([1, 2, 1, 1, 2, 1, 1, 1, 2, 1]), specs([1, 1, 2, 1])
    outcomes = await asyncio.gather(_schedule_all(shared, batched), _schedule_all(other, racing))
    placed: list[str] = []
    batched_attempts = 0
    for spec, result in zip(batched + racing, outcomes[0] + outcomes[1], strict=True):
        consumers = [str(c) for c in spec.consumer_uuids]
        claims = [a for i in result.explanation.instances for a in i.claims]
        batched_attempts += sum(
            a.written_with > 2 or "claims sent together were refused" in a.detail for a in claims
        )
        if isinstance(result, NoValidHostError):
            for consumer in consumers:
                assert await cloud.allocations(consumer) == {}
            continue
        assert [s.consumer_uuid for s in result.selections] == consumers
        placed.extend(consumers)
    assert batched_attempts  # claims of several requests did go together
    assert len(placed) <= HOSTS * PER_HOST
    await _assert_exact_accounting(cloud, hosts, placed)
