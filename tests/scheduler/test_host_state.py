"""Host states from a candidates answer: hosts, trees, sharing providers, consumption."""

from __future__ import annotations

from typing import Any

from scheduler.placement.client import CandidatesResponse
from scheduler.placement.host_state import HostMetadata, Usage, build_hosts, free_per_host
from tests.scheduler.factories import Node, hosts_for, uuid_of

CN, NUMA0, NUMA1, SHARED = (uuid_of(n) for n in ("cn", "cn-numa0", "cn-numa1", "nfs"))


def _summary(
    root: str, parent: str | None, resources: dict[str, tuple[int, int]], traits: list[str]
) -> dict[str, Any]:
    return {
        "resources": {rc: {"capacity": c, "used": u} for rc, (c, u) in resources.items()},
        "traits": traits,
        "parent_provider_uuid": parent,
        "root_provider_uuid": root,
    }


def nested_with_sharing() -> CandidatesResponse:
    """A compute node with two NUMA children, and an NFS pool shared through an aggregate."""
    return CandidatesResponse.model_validate(
        {
            "allocation_requests": [
                {
                    "allocations": {
                        numa: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}},
                        SHARED: {"resources": {"DISK_GB": 100}},
                    },
                    "mappings": {"": [numa, SHARED]},
                }
                for numa in (NUMA0, NUMA1)
            ],
            "provider_summaries": {
                CN: _summary(CN, None, {}, ["HW_ARCH_X86_64"]),
                NUMA0: _summary(CN, CN, {"VCPU": (8, 7), "MEMORY_MB": (4096, 0)}, []),
                NUMA1: _summary(CN, CN, {"VCPU": (8, 0), "MEMORY_MB": (4096, 3000)}, []),
                SHARED: _summary(
                    SHARED, None, {"DISK_GB": (1000, 850)}, ["MISC_SHARES_VIA_AGGREGATE"]
                ),
            },
        }
    )


def test_a_host_is_the_root_of_the_non_shared_providers() -> None:
    (host,) = build_hosts(nested_with_sharing(), {CN: HostMetadata(name="cn")})
    assert host.uuid == CN
    assert host.name == "cn"
    assert set(host.tree) == {CN, NUMA0, NUMA1}
    assert len(host.requests) == 2
    assert host.traits == {"HW_ARCH_X86_64"}


def test_free_capacity_sums_the_tree_and_excludes_shared_storage() -> None:
    (host,) = build_hosts(nested_with_sharing(), {})
    assert host.free("VCPU") == (8 - 7) + (8 - 0)
    assert host.free("MEMORY_MB") == 4096 + (4096 - 3000)
    assert host.free("DISK_GB") == 0


def test_the_first_request_that_still_fits_is_chosen() -> None:
    (host,) = build_hosts(nested_with_sharing(), {})
    request = host.fitting_request()
    assert request is not None
    assert NUMA1 in request.allocations  # NUMA0 has only 1 VCPU left


def test_consuming_leaves_the_host_without_room_and_says_why() -> None:
    (host,) = build_hosts(nested_with_sharing(), {})
    request = host.fitting_request()
    assert request is not None
    host.consume(request)
    assert host.fitting_request() is None
    assert host.shortfall() == f"VCPU needs 2, 1 left on provider {NUMA0}"


def test_shared_storage_consumed_through_one_host_is_gone_for_the_other() -> None:
    other = uuid_of("cn-b")
    response = CandidatesResponse.model_validate(
        {
            "allocation_requests": [
                {
                    "allocations": {
                        cn: {"resources": {"VCPU": 1}},
                        SHARED: {"resources": {"DISK_GB": 100}},
                    }
                }
                for cn in (CN, other)
            ],
            "provider_summaries": {
                CN: _summary(CN, None, {"VCPU": (8, 0)}, []),
                other: _summary(other, None, {"VCPU": (8, 0)}, []),
                SHARED: _summary(
                    SHARED, None, {"DISK_GB": (1000, 850)}, ["MISC_SHARES_VIA_AGGREGATE"]
                ),
            },
        }
    )
    first, second = build_hosts(response, {})
    request = first.fitting_request()
    assert request is not None
    first.consume(request)
    assert second.fitting_request() is None
    assert second.shortfall() == f"DISK_GB needs 100, 50 left on provider {SHARED}"


def test_consumption_counts_an_instance_when_counts_are_known() -> None:
    (host,) = hosts_for([Node("h", num_instances=4)], {"VCPU": 1})
    request = host.fitting_request()
    assert request is not None
    host.consume(request)
    assert host.num_instances == 5


def test_unknown_metadata_falls_back_to_the_uuid_as_name() -> None:
    (host,) = build_hosts(nested_with_sharing(), {})
    assert host.name == CN
    assert host.availability_zone == "nova"


def test_undoing_a_reservation_gives_its_amounts_back() -> None:
    (host,) = build_hosts(nested_with_sharing(), {})
    request = host.fitting_request()
    assert request is not None
    reservation = host.consume(request)
    assert host.free("VCPU") == 9 - 2
    reservation.undo()
    reservation.undo()  # a second undo changes nothing
    assert host.free("VCPU") == 9
    assert host.book.usage(SHARED, "DISK_GB") == Usage(1000, 850)


def test_undo_after_a_refresh_leaves_placements_newer_figures_alone() -> None:
    answer = nested_with_sharing()
    (host,) = build_hosts(answer, {})
    request = host.fitting_request()
    assert request is not None
    reservation = host.consume(request)
    host.book.refresh(answer.provider_summaries)  # read again: the claim never landed
    reservation.undo()
    assert host.free("VCPU") == 9
    assert host.book.usage(SHARED, "DISK_GB") == Usage(1000, 850)


def test_figures_read_after_a_claim_count_it_once_where_they_were_taken() -> None:
    (host,) = build_hosts(nested_with_sharing(), {})
    request = host.fitting_request()
    assert request is not None
    numa = next(rp for rp in request.allocations if rp != SHARED)
    reservation = host.consume(request)  # 2 VCPU, 1024 MB on the NUMA node, 100 GB shared
    placement_now = {"VCPU": (8, 2), "MEMORY_MB": (4096, 1024)}  # includes the claim
    reservation.counted_in(host.book.take(numa, placement_now, index=0))
    assert host.book.usage(numa, "VCPU") == Usage(8, 2)  # once, nothing held
    assert host.book.usage(SHARED, "DISK_GB") == Usage(1000, 950, held=100)  # not read: held
    stale = {"VCPU": (8, 0)}  # a figure older than the book's is not taken
    host.book.take(numa, {"VCPU": (8, 2)}, index=5)
    reservation.counted_in(host.book.take(numa, stale, index=4))
    reservation.settle()  # its feed entry
    assert host.book.usage(SHARED, "DISK_GB") == Usage(1000, 950)
    assert host.book.usage(numa, "VCPU") == Usage(8, 2, index=5)


def test_free_per_host_is_each_hosts_free_capacity() -> None:
    nested = build_hosts(nested_with_sharing(), {})
    flat = hosts_for([Node("a", used={"VCPU": 3}), Node("b")], {"VCPU": 1})
    for hosts in (nested, flat):
        for resource_class in ("VCPU", "MEMORY_MB", "DISK_GB"):
            assert free_per_host(hosts, resource_class) == [
                float(host.free(resource_class)) for host in hosts
            ]
