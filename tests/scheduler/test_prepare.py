"""Prepare hooks: the query terms filters add (member_of, in_tree, no limit), the
requests they refuse before Placement is asked, and the cycle state."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from flavors.aggregates import AggregateConfig
from scheduler.deciding.pipeline import Pipeline
from scheduler.placement.directory import ProviderDirectory
from scheduler.placement.facts import PlacementFacts
from scheduler.placement.query import candidates_query, query_string
from scheduler.plugins.cycle import Cycle, CycleState, RequestRefused, StateKey
from scheduler.request.spec import ScheduleRequest, resource_request
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import scheduler_placement

AZ1, AZ2, SSD, HDD = (str(uuid.uuid4()) for _ in range(4))
AGGREGATES = {
    AZ1: AggregateConfig(availability_zone="az1"),
    AZ2: AggregateConfig(availability_zone="az2"),
    SSD: AggregateConfig(metadata={"storage": "ssd", "gen": "5"}),
    HDD: AggregateConfig(metadata={"storage": "hdd", "gen": "3"}),
}


def cycle_for(**request: Any) -> Cycle:
    settings = SchedulerSettings(
        aggregates=AGGREGATES, enabled_filters=["availability_zone", "aggregate_extra_specs"]
    )
    # Nothing here reads Placement: these hooks work from the settings alone.
    client = scheduler_placement("http://127.0.0.1:9")
    facts = PlacementFacts(client, ProviderDirectory(client, AGGREGATES))
    spec = ScheduleRequest.model_validate({"resources": {"VCPU": 1}, **request})
    return Cycle(spec, settings, facts)


async def prepared(**request: Any) -> Cycle:
    cycle = cycle_for(**request)
    await Pipeline.from_settings(cycle.settings).prepare(cycle)
    return cycle


async def test_an_availability_zone_becomes_member_of_its_aggregates() -> None:
    terms = (await prepared(availability_zone="az2")).terms
    assert terms.member_of == [(AZ2,)]
    assert terms.why == [f"availability zone az2: member_of=in:{AZ2}"]


async def test_the_default_zone_excludes_the_aggregates_of_other_zones() -> None:
    cycle = await prepared(availability_zone="nova")
    terms = cycle.terms
    assert terms.member_of == []
    assert terms.not_member_of == {AZ1, AZ2}
    request = resource_request(cycle.spec, None, terms.member_of, terms.not_member_of)
    query = query_string(candidates_query(request, 5))
    assert f"member_of=!in:{','.join(sorted([AZ1, AZ2]))}" in query


async def test_a_zone_no_aggregate_names_is_refused_before_placement_is_asked() -> None:
    with pytest.raises(RequestRefused, match="no aggregate is configured for availability zone x"):
        await prepared(availability_zone="x")


async def test_aggregate_extra_specs_become_one_member_of_per_requirement() -> None:
    flavor = {
        "vcpus": 1,
        "memory_mb": 512,
        "extra_specs": {
            "aggregate_instance_extra_specs:storage": "<or> ssd <or> nvme",
            "gen": ">= 3",
            "hw:cpu_policy": "shared",
        },
    }
    terms = (await prepared(flavor=flavor)).terms
    assert terms.member_of == [(SSD,), tuple(sorted([SSD, HDD]))]
    with pytest.raises(RequestRefused, match="no aggregate's metadata has gen matching '= 9'"):
        await prepared(flavor={**flavor, "extra_specs": {"gen": "= 9"}})


async def test_forced_hosts_skip_the_zone_terms_and_several_lift_the_limit() -> None:
    cycle = await prepared(availability_zone="az1", hints={"force_hosts": ["a", "b"]})
    assert cycle.terms.member_of == []  # the zone filter does not run on forced hosts
    forced = cycle_for(hints={"force_hosts": ["a", "b"]})
    await Pipeline.from_settings(SchedulerSettings(enabled_filters=["force_hosts"])).prepare(forced)
    assert forced.terms.unlimited
    assert forced.terms.why == ["forced hosts a, b: no limit"]


def test_cycle_state_reads_what_was_written_and_names_what_was_not() -> None:
    key, other = StateKey[int]("answer"), StateKey[int]("other")
    state = CycleState()
    state.write(key, 42)
    assert state.read(key) == 42
    assert key in state
    assert state.get(other) is None
    with pytest.raises(LookupError, match="nothing was prepared under 'other'"):
        state.read(other)
