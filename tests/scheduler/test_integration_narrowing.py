"""Filters that cannot be fooled by ``limit`` (a real Placement, SQLite and
PostgreSQL): the zone, aggregate metadata and forced hosts are terms of the
candidates query, so with ``max_allocation_candidates`` 1 and many hosts the
one host that fits is still found."""

from __future__ import annotations

import uuid

import pytest

from flavors.aggregates import AggregateConfig
from scheduler.deciding.errors import NoValidHostError
from scheduler.request.spec import ScheduleRequest
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import Cloud

FLAVOR = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
OTHERS = 8


def spec(**fields: object) -> ScheduleRequest:
    return ScheduleRequest.model_validate({"resources": FLAVOR, **fields})


async def crowd(cloud: Cloud) -> list[str]:
    """Roomy hosts in no aggregate, made first, so Placement lists them first."""
    return [await cloud.host(f"other-{i}", memory_mb=65536) for i in range(OTHERS)]


async def test_a_zone_host_beyond_the_first_candidates_is_found(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    zone = str(uuid.uuid4())
    others = await crowd(cloud)
    inside = await cloud.host("inside", memory_mb=4096, aggregates=(zone,))
    scheduler = make_scheduler(
        max_allocation_candidates=1,
        aggregates={zone: AggregateConfig(availability_zone="az1")},
    )
    for _ in range(2):
        result = await scheduler.schedule(spec(availability_zone="az1"))
        assert result.selections[0].provider.uuid == inside
    default_zone = await scheduler.schedule(spec(availability_zone="nova"))
    assert default_zone.selections[0].provider.uuid in others
    with pytest.raises(NoValidHostError, match="no aggregate is configured for availability"):
        await scheduler.schedule(spec(availability_zone="az9"))


async def test_an_aggregate_metadata_match_beyond_the_first_candidates_is_found(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    fast = str(uuid.uuid4())
    await crowd(cloud)
    inside = await cloud.host("fast", memory_mb=4096, aggregates=(fast,))
    scheduler = make_scheduler(
        max_allocation_candidates=1, aggregates={fast: AggregateConfig(metadata={"disk": "nvme"})}
    )
    flavor = {"vcpus": 1, "memory_mb": 512, "extra_specs": {"disk": "<or> nvme <or> ssd"}}
    result = await scheduler.schedule(ScheduleRequest.model_validate({"flavor": flavor}))
    assert result.selections[0].provider.uuid == inside


async def test_several_forced_hosts_beyond_the_first_candidates_are_found(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await crowd(cloud)
    forced = {await cloud.host(f"forced-{i}", memory_mb=4096) for i in range(2)}
    scheduler = make_scheduler(max_allocation_candidates=1)
    result = await scheduler.schedule(spec(hints={"force_hosts": ["forced-0", "forced-1"]}))
    assert result.selections[0].provider.uuid in forced
    placement = result.explanation.placement
    assert placement is not None
    assert "limit" not in placement.request.query


async def test_hosts_without_heartbeats_are_chosen_and_the_explanation_says_so(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    host = await cloud.host("silent")
    result = await make_scheduler().schedule(spec())
    assert result.selections[0].provider.uuid == host
    (liveness,) = [f for f in result.explanation.instances[0].filters if f.name == "liveness"]
    assert [n.host for n in liveness.noted] == ["silent"]
    assert liveness.noted[0].note.startswith("liveness unknown")
