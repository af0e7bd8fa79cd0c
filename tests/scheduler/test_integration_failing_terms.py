"""When Placement finds nothing, the explanation counts the hosts each term removes."""

from __future__ import annotations

import pytest

from scheduler.deciding.errors import NoValidHostError
from scheduler.request.spec import ScheduleRequest
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import HEADERS, Cloud, new_uuid


async def test_each_term_is_counted_against_the_hosts_it_removes(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    for trait in ("CUSTOM_FAST", "CUSTOM_SLOW"):
        assert (await cloud.http.put(f"/traits/{trait}", headers=HEADERS)).status_code == 201
    zone = new_uuid()
    fast, slow = ("CUSTOM_FAST",), ("CUSTOM_FAST", "CUSTOM_SLOW")
    # Each host fails exactly one term: 2 too small, 3 without the trait, 1 with the
    # forbidden one, 2 outside the aggregate.
    for i in range(2):
        await cloud.host(f"small-{i}", vcpu=4, traits=fast, aggregates=(zone,))
    for i in range(3):
        await cloud.host(f"plain-{i}", aggregates=(zone,))
    await cloud.host("slow-0", traits=slow, aggregates=(zone,))
    for i in range(2):
        await cloud.host(f"outside-{i}", traits=fast)
    # A sharing provider is no host.
    await cloud.host("shared-disk", traits=("MISC_SHARES_VIA_AGGREGATE",), aggregates=(zone,))
    request = ScheduleRequest.model_validate(
        {
            "resources": {"VCPU": 8},
            "required_traits": ["CUSTOM_FAST"],
            "forbidden_traits": ["CUSTOM_SLOW"],
            "member_of": [[zone]],
        }
    )
    with pytest.raises(NoValidHostError) as refused:
        await make_scheduler().schedule(request)
    placement = refused.value.explanation.placement
    assert placement is not None
    assert [(t.term, t.hosts) for t in placement.failing_terms] == [
        ("resources=VCPU:8", 2),
        ("required=CUSTOM_FAST", 3),
        ("required=!CUSTOM_SLOW", 1),
        (f"member_of=in:{zone}", 2),
    ]
    assert (
        "0/8 hosts are available: 2 fail resources=VCPU:8, 3 fail required=CUSTOM_FAST, "
        f"1 fail required=!CUSTOM_SLOW, 2 fail member_of=in:{zone}"
    ) in str(refused.value)
