"""Weighing a sample: the search stops after ``feasible_hosts_to_score`` feasible hosts,
rotates its start, reports what it examined, and never refuses on a sample."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import pytest

from scheduler.answers.explain import InstanceExplanation
from scheduler.deciding.choosing import Chooser, UnplaceableError
from scheduler.deciding.feasible import search
from scheduler.deciding.pipeline import Pipeline
from scheduler.placement.host_state import HostState
from scheduler.request.spec import Hints, ServerGroupHint
from scheduler.settings import SchedulerSettings
from tests.scheduler.factories import Node, context_naming, cycle_of, decide, hosts_for

REQUEST = {"VCPU": 1, "MEMORY_MB": 1024}


def chooser(**settings: Any) -> Chooser:
    configured = SchedulerSettings(**settings)
    return Chooser(configured, Pipeline.from_settings(configured), random.Random(7))


def report(hosts: list[HostState]) -> InstanceExplanation:
    return InstanceExplanation(consumer_uuid=str(uuid.uuid4()), hosts_considered=len(hosts))


def cloud(count: int, **node: Any) -> list[HostState]:
    return hosts_for([Node(f"h{i:03d}", **node) for i in range(count)], REQUEST)


def test_the_search_stops_after_enough_feasible_hosts_and_says_so() -> None:
    hosts = cloud(200)
    explained = report(hosts)
    weighed = decide(chooser(feasible_hosts_to_score=20), hosts, context_naming(hosts), explained)
    assert explained.hosts_examined == 20
    assert explained.search_stopped == (
        "stopped after 20 feasible hosts of 200 (20 examined; feasible_hosts_to_score is 20)"
    )
    assert len({w.host.uuid for w in weighed}) == len(weighed) <= 20
    assert all((f.hosts_in, f.hosts_out) == (20, 20) for f in explained.filters)


def test_successive_decisions_start_where_the_last_one_stopped() -> None:
    hosts = cloud(100)
    choosing = chooser(feasible_hosts_to_score=20, explain_top_hosts=20, max_attempts=1)
    seen: list[set[str]] = []
    for _ in range(5):
        explained = report(hosts)
        decide(choosing, hosts, context_naming(hosts), explained)
        seen.append({w.uuid for w in explained.weighed})
    assert set.union(*seen) == {h.uuid for h in hosts}  # 5 x 20 hosts: each examined once


def test_ranking_changes_nothing_until_the_cursor_is_moved_on() -> None:
    hosts = cloud(100)
    choosing = chooser(feasible_hosts_to_score=20)
    first = choosing.rank(hosts, context_naming(hosts))
    again = choosing.rank(hosts, context_naming(hosts))
    assert [w.host for w in again.weighed] == [w.host for w in first.weighed]
    choosing.move_on(first)
    moved = choosing.rank(hosts, context_naming(hosts))
    assert not {w.host.uuid for w in moved.weighed} & {w.host.uuid for w in first.weighed}


def test_rejected_hosts_do_not_count_and_the_search_goes_on() -> None:
    nodes = [Node(f"h{i:03d}") for i in range(100)]
    for node in nodes[::2]:
        node.traits = ("COMPUTE_STATUS_DISABLED",)
    hosts = hosts_for(nodes, REQUEST)
    explained = report(hosts)
    decide(chooser(feasible_hosts_to_score=10), hosts, context_naming(hosts), explained)
    enabled = next(f for f in explained.filters if f.name == "compute_enabled")
    assert enabled.hosts_out >= 10
    assert enabled.hosts_in == explained.hosts_examined
    assert enabled.hosts_in - enabled.hosts_out == len(enabled.rejected)


def test_chunked_reports_add_up_to_one_pass_over_every_host() -> None:
    nodes = [Node(f"h{i:03d}", availability_zone="az1" if i % 7 else "az2") for i in range(60)]
    for node in nodes[::3]:
        node.traits = ("COMPUTE_STATUS_DISABLED",)
    hosts = hosts_for(nodes, REQUEST)
    context = cycle_of(availability_zone="az2")
    pipeline = Pipeline.from_settings(SchedulerSettings(explain_max_rejections=100))
    passed, whole = pipeline.run_filters(hosts, context)
    # Fewer than 50 hosts pass: chunks of 50 and 10 hosts, from the 18th host round.
    found = search(pipeline, hosts, context, wanted=50, start=17, max_rejections=100)
    assert found.examined == len(hosts)
    assert {h.uuid for h in found.feasible} == {h.uuid for h in passed}
    assert [(f.name, f.hosts_in, f.hosts_out) for f in found.filters] == [
        (f.name, f.hosts_in, f.hosts_out) for f in whole
    ]
    assert sorted(r.uuid for f in found.filters for r in f.rejected) == sorted(
        r.uuid for f in whole for r in f.rejected
    )


def test_nothing_feasible_means_every_host_was_examined_and_the_stage_is_named() -> None:
    hosts = cloud(80)
    explained = report(hosts)
    with pytest.raises(UnplaceableError) as refused:
        decide(
            chooser(feasible_hosts_to_score=10),
            hosts,
            cycle_of(availability_zone="az9"),
            explained,
        )
    assert refused.value.stage == "filter"
    assert "availability_zone removed the last 80 host(s)" in refused.value.reason
    assert explained.hosts_examined == 80
    assert explained.search_stopped is None


def test_a_forced_host_is_found_however_far_down_the_list() -> None:
    hosts = cloud(300)
    explained = report(hosts)
    context = context_naming(hosts, hints=Hints(force_hosts=["h250"]))
    weighed = decide(chooser(feasible_hosts_to_score=10), hosts, context, explained)
    assert [w.host.name for w in weighed] == ["h250"]
    assert explained.hosts_examined == 300


def test_anti_affinity_is_honoured_on_a_sample() -> None:
    hosts = cloud(50)
    group = ServerGroupHint(uuid=uuid.uuid4(), policy="anti-affinity", name="web")
    taken = Counter({host.uuid: 1 for host in hosts[:45]})
    context = context_naming(hosts, hints=Hints(group=group), group_hosts=taken)
    weighed = decide(chooser(feasible_hosts_to_score=3), hosts, context, report(hosts))
    assert {w.host.name for w in weighed} <= {h.name for h in hosts[45:]}


def test_soft_affinity_hosts_are_always_in_the_sample() -> None:
    hosts = cloud(200)
    group = ServerGroupHint(uuid=uuid.uuid4(), policy="soft-affinity")
    member_host = hosts[150]
    context = context_naming(
        hosts, hints=Hints(group=group), group_hosts=Counter({member_host.uuid: 2})
    )
    choosing = chooser(
        feasible_hosts_to_score=10,
        weigher_multipliers={"server_group_soft_affinity": 100, "instance_count": 0},
    )
    for _ in range(3):
        assert decide(choosing, hosts, context, report(hosts))[0].host is member_host


def test_zero_examines_and_weighs_every_host() -> None:
    hosts = cloud(150)
    explained = report(hosts)
    decide(
        chooser(feasible_hosts_to_score=0, explain_top_hosts=150),
        hosts,
        context_naming(hosts),
        explained,
    )
    assert explained.hosts_examined == 150
    assert explained.search_stopped is None
    assert len(explained.weighed) == 150
