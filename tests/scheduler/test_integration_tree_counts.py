"""Per-host counts see the whole tree: consumers on NUMA children count too."""

from __future__ import annotations

import pytest

from scheduler.deciding.errors import NoValidHostError
from scheduler.request.spec import ScheduleRequest
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import Cloud, new_uuid


def one_vcpu() -> ScheduleRequest:
    return ScheduleRequest.model_validate({"resources": {"VCPU": 1}})


async def nested_host_with_four_consumers(cloud: Cloud) -> str:
    """1 consumer on the root, 2 on one cell, 1 on the other, 1 across root and a cell."""
    root = await cloud.host("nested", vcpu=4)
    cells = [await cloud.child(f"nested_NUMA{i}", root, {"VCPU": 8}) for i in range(2)]
    await cloud.allocate(new_uuid(), root, {"VCPU": 1})
    await cloud.allocate(new_uuid(), cells[0], {"VCPU": 1})
    await cloud.allocate(new_uuid(), cells[0], {"VCPU": 1})
    await cloud.allocate(new_uuid(), cells[1], {"VCPU": 1}, (root, {"MEMORY_MB": 512}))
    return root


async def test_a_nested_host_at_its_instance_limit_is_refused(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await nested_host_with_four_consumers(cloud)
    scheduler = make_scheduler(enabled_filters=["max_instances_per_host"], max_instances_per_host=4)
    with pytest.raises(NoValidHostError, match="max instances: 4 on host, limit is 4"):
        await scheduler.schedule(one_vcpu())


async def test_the_instance_count_weigher_counts_the_whole_tree(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    nested = await nested_host_with_four_consumers(cloud)
    flat = await cloud.host("flat", vcpu=16)
    for _ in range(2):
        await cloud.allocate(new_uuid(), flat, {"VCPU": 1})
    scheduler = make_scheduler(
        enabled_filters=["max_instances_per_host"],
        max_instances_per_host=5,
        enabled_weighers=["instance_count"],
        weigher_multipliers={"instance_count": -1.0},
    )
    result = await scheduler.schedule(one_vcpu())
    assert result.selections[0].provider.uuid == flat
    raw = {
        w.uuid: term.raw
        for w in result.explanation.instances[0].weighed
        for term in w.terms
        if term.weigher == "instance_count"
    }
    assert raw == {nested: 4.0, flat: 2.0}
