"""Every filter: which hosts pass, and the reason a rejected host is given."""

from __future__ import annotations

import uuid
from collections import Counter

from scheduler.placement.host_state import HostState
from scheduler.plugins import FILTERS
from scheduler.plugins.base import HostFilter
from scheduler.plugins.cycle import Cycle
from scheduler.plugins.filters import different_host, same_host
from scheduler.request.spec import Hints, ImageProperties, ServerGroupHint
from tests.scheduler.factories import Node, context_naming, cycle_of, hosts_for

SMALL = {"VCPU": 1, "MEMORY_MB": 512}
GROUP = uuid.UUID("0b0e3b0c-5a43-4b1e-9d3c-0f3f35d1a001")


def verdicts(name: str, hosts: list[HostState], context: Cycle) -> dict[str, str | None]:
    """host name -> None when it passes, else the rejection reason."""
    host_filter: HostFilter = FILTERS[name]()
    result = {}
    for host in hosts:
        verdict = host_filter.verdict(host, context)
        result[host.name] = None if verdict.passed else verdict.reason
    return result


def three_hosts(**overrides: Node) -> list[HostState]:
    nodes = {name: Node(name) for name in ("host-1", "host-2", "host-3")}
    nodes.update(overrides)
    return hosts_for(list(nodes.values()), SMALL)


def group_context(hosts: list[HostState], policy: str, on: dict[str, int]) -> Cycle:
    by_name = {host.name: host.uuid for host in hosts}
    hint = ServerGroupHint(uuid=GROUP, policy=policy, name="web")
    return context_naming(
        hosts,
        hints=Hints(group=hint),
        group_hosts=Counter({by_name[name]: count for name, count in on.items()}),
    )


def test_ignore_hosts_removes_named_hosts_case_blind() -> None:
    hosts = three_hosts()
    context = cycle_of(hints=Hints(ignore_hosts=["HOST-2"]))
    assert verdicts("ignore_hosts", hosts, context) == {
        "host-1": None,
        "host-2": "ignore_hosts: the request ignores host-2",
        "host-3": None,
    }


def test_force_hosts_keeps_only_forced_names_and_force_nodes_accepts_uuids() -> None:
    hosts = three_hosts()
    forced = cycle_of(hints=Hints(force_hosts=["host-3"]))
    assert verdicts("force_hosts", hosts, forced) == {
        "host-1": "force_hosts: not one of host-3",
        "host-2": "force_hosts: not one of host-3",
        "host-3": None,
    }
    by_uuid = cycle_of(hints=Hints(force_nodes=[hosts[0].uuid]))
    passed = [n for n, why in verdicts("force_hosts", hosts, by_uuid).items() if why is None]
    assert passed == ["host-1"]


def test_force_hosts_passes_everything_when_nothing_is_forced() -> None:
    assert set(verdicts("force_hosts", three_hosts(), cycle_of()).values()) == {None}


def test_availability_zone_compares_the_host_zone() -> None:
    hosts = three_hosts(**{"host-2": Node("host-2", availability_zone="az1")})
    context = cycle_of(availability_zone="az1")
    assert verdicts("availability_zone", hosts, context) == {
        "host-1": "availability zone: host is in nova, not az1",
        "host-2": None,
        "host-3": "availability zone: host is in nova, not az1",
    }
    assert set(verdicts("availability_zone", hosts, cycle_of()).values()) == {None}


def test_compute_enabled_rejects_the_disabled_trait() -> None:
    hosts = three_hosts(**{"host-1": Node("host-1", traits=("COMPUTE_STATUS_DISABLED",))})
    result = verdicts("compute_enabled", hosts, cycle_of())
    assert result["host-1"] == "compute disabled: host has trait COMPUTE_STATUS_DISABLED"
    assert result["host-2"] is None


def test_image_architecture_needs_the_matching_trait_with_aliases() -> None:
    hosts = three_hosts(
        **{
            "host-1": Node("host-1", traits=("HW_ARCH_X86_64",)),
            "host-2": Node("host-2", traits=("HW_ARCH_AARCH64", "COMPUTE_ARCH_X86_64")),
        }
    )
    amd64 = cycle_of(image=ImageProperties(hw_architecture="amd64"))
    assert verdicts("image_properties", hosts, amd64) == {
        "host-1": None,
        "host-2": "image wants hw_architecture=amd64 (HW_ARCH_X86_64); host has HW_ARCH_AARCH64",
        "host-3": "image wants hw_architecture=amd64 (HW_ARCH_X86_64); host has none",
    }
    emulated = cycle_of(image=ImageProperties(hw_emulation_architecture="x86_64"))
    passed = [n for n, why in verdicts("image_properties", hosts, emulated).items() if not why]
    assert passed == ["host-2"]


def test_same_host_keeps_hosts_running_a_named_consumer() -> None:
    hosts = three_hosts()
    context = cycle_of(hints=Hints(same_host=[uuid.uuid4()]))
    context.state.write(
        same_host.TARGETS, same_host.SameHostTargets(frozenset({hosts[1].uuid}), "host-2")
    )
    assert verdicts("same_host", hosts, context) == {
        "host-1": "same_host: the named consumers run on host-2, not here",
        "host-2": None,
        "host-3": "same_host: the named consumers run on host-2, not here",
    }


def test_same_host_rejects_all_when_the_consumers_run_nowhere() -> None:
    context = cycle_of(hints=Hints(same_host=[uuid.uuid4()]))
    context.state.write(same_host.TARGETS, same_host.SameHostTargets(frozenset(), ""))
    reasons = set(verdicts("same_host", three_hosts(), context).values())
    assert reasons == {"same_host: none of the named consumers has allocations anywhere"}


def test_different_host_rejects_hosts_running_a_named_consumer() -> None:
    hosts = three_hosts()
    other = str(uuid.uuid4())
    context = cycle_of(hints=Hints(different_host=[uuid.UUID(other)]))
    context.state.write(different_host.TARGETS, {hosts[0].uuid: {other}})
    assert verdicts("different_host", hosts, context) == {
        "host-1": f"different_host: consumer {other} runs here",
        "host-2": None,
        "host-3": None,
    }


def test_affinity_keeps_only_hosts_with_members_once_one_is_placed() -> None:
    hosts = three_hosts()
    context = group_context(hosts, "affinity", {"host-2": 1})
    assert verdicts("server_group_affinity", hosts, context) == {
        "host-1": "affinity: group web is on host-2",
        "host-2": None,
        "host-3": "affinity: group web is on host-2",
    }
    empty_group = group_context(hosts, "affinity", {})
    assert set(verdicts("server_group_affinity", hosts, empty_group).values()) == {None}


def test_anti_affinity_rejects_hosts_with_a_member() -> None:
    hosts = three_hosts()
    context = group_context(hosts, "anti-affinity", {"host-3": 1})
    assert verdicts("server_group_anti_affinity", hosts, context) == {
        "host-1": None,
        "host-2": None,
        "host-3": "anti-affinity: group web already on host-3",
    }


def test_anti_affinity_allows_up_to_max_server_per_host() -> None:
    hosts = three_hosts()
    context = group_context(hosts, "anti-affinity", {"host-1": 1, "host-2": 2})
    assert context.group is not None
    context.hints.group = context.group.model_copy(update={"max_server_per_host": 2})
    result = verdicts("server_group_anti_affinity", hosts, context)
    assert result["host-1"] is None
    assert result["host-2"] == (
        "anti-affinity: group web has 2 members on host-2, max_server_per_host is 2"
    )


def test_group_filters_ignore_other_policies() -> None:
    hosts = three_hosts()
    soft = group_context(hosts, "soft-anti-affinity", {"host-1": 3})
    assert set(verdicts("server_group_anti_affinity", hosts, soft).values()) == {None}
    assert set(verdicts("server_group_affinity", hosts, soft).values()) == {None}


def test_max_instances_per_host_counts_consumers() -> None:
    hosts = three_hosts(
        **{"host-1": Node("host-1", num_instances=3), "host-2": Node("host-2", num_instances=2)}
    )
    context = cycle_of(max_instances_per_host=3)
    assert verdicts("max_instances_per_host", hosts, context) == {
        "host-1": "max instances: 3 on host, limit is 3",
        "host-2": None,
        "host-3": None,
    }


def test_aggregate_extra_specs_match_scoped_and_unscoped_keys() -> None:
    hosts = three_hosts(
        **{
            "host-1": Node("host-1", aggregate_metadata={"storage": frozenset({"ssd"})}),
            "host-2": Node(
                "host-2",
                aggregate_metadata={"storage": frozenset({"hdd"}), "gen": frozenset({"5"})},
            ),
        }
    )
    context = cycle_of(
        extra_specs={
            "aggregate_instance_extra_specs:storage": "<or> ssd <or> nvme",
            "hw:cpu_policy": "dedicated",
            "resources:VCPU": "1",
            "group_policy": "none",
        }
    )
    assert verdicts("aggregate_extra_specs", hosts, context) == {
        "host-1": None,
        "host-2": "aggregate metadata: storage=hdd does not match '<or> ssd <or> nvme'",
        "host-3": "aggregate metadata: no storage (flavor wants '<or> ssd <or> nvme')",
    }
    numeric = cycle_of(extra_specs={"gen": "= 4"})
    passed = [n for n, why in verdicts("aggregate_extra_specs", hosts, numeric).items() if not why]
    assert passed == ["host-2"]


def test_every_registered_filter_has_a_unique_name_and_a_description() -> None:
    assert len(FILTERS) == len({cls.name for cls in FILTERS.values()})
    assert all(cls.description for cls in FILTERS.values())
