"""The pipeline: filter counts and reasons, forced hosts, normalised weights, strategy."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from scheduler.deciding.pipeline import FORCED_SKIP, Pipeline, UnknownPluginError, normalise
from scheduler.request.spec import Hints, ServerGroupHint
from scheduler.settings import SchedulerSettings
from tests.scheduler.factories import Node, context_naming, cycle_of, hosts_for

REQUEST = {"VCPU": 1, "MEMORY_MB": 1024}


def pipeline(**settings: Any) -> Pipeline:
    return Pipeline.from_settings(SchedulerSettings(**settings))


def sized_nodes() -> list[Node]:
    return [
        Node("small", capacity={"VCPU": 8, "MEMORY_MB": 8192}),
        Node("medium", capacity={"VCPU": 16, "MEMORY_MB": 16384}),
        Node("large", capacity={"VCPU": 32, "MEMORY_MB": 65536}),
    ]


def test_normalise_scales_to_zero_one_and_flat_values_to_zero() -> None:
    assert normalise([2.0, 4.0, 6.0]) == [0.0, 0.5, 1.0]
    assert normalise([3.0, 3.0]) == [0.0, 0.0]


def test_filter_reports_count_hosts_in_and_out_with_reasons() -> None:
    nodes = sized_nodes()
    nodes[0].traits = ("COMPUTE_STATUS_DISABLED",)
    hosts = hosts_for(nodes, REQUEST)
    group = ServerGroupHint(uuid=uuid.uuid4(), policy="anti-affinity", name="web")
    context = context_naming(
        hosts, hints=Hints(group=group), group_hosts=Counter({hosts[2].uuid: 1})
    )
    passed, reports = pipeline().run_filters(hosts, context)
    assert [h.name for h in passed] == ["medium"]
    by_name = {r.name: r for r in reports}
    disabled = by_name["compute_enabled"]
    assert (disabled.hosts_in, disabled.hosts_out) == (3, 2)
    assert [(r.host, r.reason) for r in disabled.rejected] == [
        ("small", "compute disabled: host has trait COMPUTE_STATUS_DISABLED")
    ]
    anti = by_name["server_group_anti_affinity"]
    assert (anti.hosts_in, anti.hosts_out) == (2, 1)
    assert anti.rejected[0].reason == "anti-affinity: group web already on large"


def test_filtering_stops_at_the_filter_that_empties_the_list() -> None:
    hosts = hosts_for(sized_nodes(), REQUEST)
    context = cycle_of(availability_zone="az9")
    passed, reports = pipeline().run_filters(hosts, context)
    assert passed == []
    assert reports[-1].name == "availability_zone"
    assert reports[-1].hosts_out == 0
    assert len(reports) == 3  # ignore_hosts, force_hosts, availability_zone


def test_rejections_beyond_the_limit_are_counted_not_listed() -> None:
    hosts = hosts_for([Node(f"h{i}") for i in range(10)], REQUEST)
    context = cycle_of(availability_zone="az9")
    _, reports = pipeline(explain_max_rejections=3).run_filters(hosts, context)
    assert len(reports[-1].rejected) == 3
    assert reports[-1].rejected_not_listed == 7


def test_forced_hosts_skip_other_filters_but_not_force_and_ignore() -> None:
    nodes = sized_nodes()
    nodes[1].traits = ("COMPUTE_STATUS_DISABLED",)
    hosts = hosts_for(nodes, REQUEST)
    context = cycle_of(
        hints=Hints(force_hosts=["medium", "small"], ignore_hosts=["small"]),
        availability_zone="elsewhere",
    )
    passed, reports = pipeline().run_filters(hosts, context)
    assert [h.name for h in passed] == ["medium"]
    skipped = {r.name for r in reports if r.skipped == FORCED_SKIP}
    assert {"availability_zone", "compute_enabled"} <= skipped
    assert {"ignore_hosts", "force_hosts"}.isdisjoint(skipped)


def test_spread_prefers_the_host_with_most_free_resources() -> None:
    hosts = hosts_for(sized_nodes(), REQUEST)
    weighed = pipeline(enabled_weighers=["ram", "cpu"]).weigh(hosts, cycle_of())
    assert [w.host.name for w in weighed] == ["large", "medium", "small"]
    best = weighed[0].report()
    assert best.total == pytest.approx(2.0)
    assert {t.weigher: t.normalised for t in best.terms} == {"ram": 1.0, "cpu": 1.0}


def test_pack_flips_the_resource_weighers() -> None:
    hosts = hosts_for(sized_nodes(), REQUEST)
    weighed = pipeline(enabled_weighers=["ram"], strategy="pack").weigh(hosts, cycle_of())
    assert [w.host.name for w in weighed] == ["small", "medium", "large"]
    assert weighed[-1].report().terms[0].multiplier == -1.0


def test_multipliers_scale_each_weigher_and_zero_disables_it() -> None:
    hosts = hosts_for(sized_nodes(), REQUEST)
    chosen = pipeline(
        enabled_weighers=["ram", "instance_count"],
        weigher_multipliers={"ram": 2.5, "instance_count": 0},
    )
    assert [w.plugin.name for w in chosen.weighers] == ["ram"]
    weighed = chosen.weigh(hosts, cycle_of())
    medium = next(w for w in weighed if w.host.name == "medium")
    assert medium.total == pytest.approx(2.5 * (16384 - 8192) / (65536 - 8192))


def test_soft_anti_affinity_outweighs_free_memory_when_multiplied_more() -> None:
    hosts = hosts_for(sized_nodes(), REQUEST)
    group = ServerGroupHint(uuid=uuid.uuid4(), policy="soft-anti-affinity")
    context = cycle_of(hints=Hints(group=group), group_hosts=Counter({hosts[2].uuid: 1}))
    chosen = pipeline(
        enabled_weighers=["ram", "server_group_soft_anti_affinity"],
        weigher_multipliers={"server_group_soft_anti_affinity": 10},
    )
    assert chosen.weigh(hosts, context)[0].host.name == "medium"


def test_unknown_plugin_names_fail_with_the_available_ones() -> None:
    with pytest.raises(UnknownPluginError, match="unknown filter nope; available: "):
        pipeline(enabled_filters=["ram_filter", "nope"][1:])
    with pytest.raises(UnknownPluginError, match="weigher multiplier"):
        pipeline(weigher_multipliers={"gpu": 1.0})


def test_filters_run_in_configured_order() -> None:
    order = ["compute_enabled", "availability_zone"]
    assert [f.name for f in pipeline(enabled_filters=order).filters] == order
