"""Every weigher's raw value (the pipeline normalises and multiplies)."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from scheduler.plugins import WEIGHERS
from scheduler.request.spec import Hints, ServerGroupHint
from tests.scheduler.factories import Node, cycle_of, hosts_for

REQUEST = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}


@pytest.mark.parametrize(
    ("weigher", "resource_class"), [("ram", "MEMORY_MB"), ("cpu", "VCPU"), ("disk", "DISK_GB")]
)
def test_resource_weighers_return_free_capacity_under_the_ratio(
    weigher: str, resource_class: str
) -> None:
    node = Node("host-1", used={resource_class: 6})
    (host,) = hosts_for([node], REQUEST)
    raw = WEIGHERS[weigher]().raw_weight(host, cycle_of())
    assert raw == node.capacity[resource_class] - 6
    assert WEIGHERS[weigher].follows_strategy


def test_resource_weighers_see_what_earlier_instances_consumed() -> None:
    (host,) = hosts_for([Node("host-1")], REQUEST)
    before = WEIGHERS["ram"]().raw_weight(host, cycle_of())
    request = host.fitting_request()
    assert request is not None
    host.consume(request)
    assert WEIGHERS["ram"]().raw_weight(host, cycle_of()) == before - 512


def test_instance_count_weigher_returns_the_count() -> None:
    (host,) = hosts_for([Node("host-1", num_instances=7)], REQUEST)
    assert WEIGHERS["instance_count"]().raw_weight(host, cycle_of()) == 7


@pytest.mark.parametrize(
    ("weigher", "policy", "expected"),
    [
        ("server_group_soft_affinity", "soft-affinity", 2.0),
        ("server_group_soft_affinity", "anti-affinity", 0.0),
        ("server_group_soft_anti_affinity", "soft-anti-affinity", -2.0),
        ("server_group_soft_anti_affinity", "soft-affinity", 0.0),
    ],
)
def test_group_weighers_count_members_on_the_host_for_their_policy(
    weigher: str, policy: str, expected: float
) -> None:
    (host,) = hosts_for([Node("host-1")], REQUEST)
    group = ServerGroupHint(uuid=uuid.uuid4(), policy=policy)
    context = cycle_of(hints=Hints(group=group), group_hosts=Counter({host.uuid: 2}))
    assert WEIGHERS[weigher]().raw_weight(host, context) == expected
