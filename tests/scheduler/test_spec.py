"""Request specs: flavor conversion, validation, and the Placement query they become."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from scheduler.placement.query import candidates_query, query_string
from scheduler.request.spec import ScheduleRequest, resource_request

AGG_A = "11111111-1111-4111-8111-111111111111"
AGG_B = "22222222-2222-4222-8222-222222222222"


def test_flavor_fields_become_vcpu_memory_and_disk_with_swap_rounded_up() -> None:
    spec = ScheduleRequest.model_validate(
        {"flavor": {"vcpus": 2, "memory_mb": 4096, "root_gb": 20, "ephemeral_gb": 5, "swap": 1025}}
    )
    group = resource_request(spec).unnumbered
    assert group.resources == {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 27}


def test_extra_specs_add_classes_drop_zeroed_ones_and_set_traits() -> None:
    spec = ScheduleRequest.model_validate(
        {
            "flavor": {
                "vcpus": 4,
                "memory_mb": 2048,
                "root_gb": 10,
                "extra_specs": {
                    "resources:VCPU": "0",
                    "resources:PCPU": "4",
                    "resources:CUSTOM_FPGA": "1",
                    "trait:HW_CPU_X86_AVX2": "required",
                    "trait:CUSTOM_SLOW": "forbidden",
                },
            }
        }
    )
    group = resource_request(spec).unnumbered
    assert group.resources == {"PCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 10, "CUSTOM_FPGA": 1}
    assert group.required == {"HW_CPU_X86_AVX2"}
    assert group.forbidden == {"CUSTOM_SLOW"}


def test_suffixed_extra_specs_become_granular_groups_with_default_policy() -> None:
    spec = ScheduleRequest.model_validate(
        {
            "flavor": {
                "vcpus": 1,
                "memory_mb": 512,
                "extra_specs": {
                    "resources1:SRIOV_NET_VF": "1",
                    "trait1:CUSTOM_PHYSNET_A": "required",
                    "resources_GPU:VGPU": "1",
                },
            }
        }
    )
    request = resource_request(spec)
    suffixes = {group.suffix: group for group in request.groups}
    assert set(suffixes) == {"", "1", "_GPU"}
    assert suffixes["1"].resources == {"SRIOV_NET_VF": 1}
    assert suffixes["1"].required == {"CUSTOM_PHYSNET_A"}
    assert request.group_policy == "none"


def test_explicit_resources_override_the_flavor() -> None:
    spec = ScheduleRequest.model_validate(
        {"flavor": {"vcpus": 2, "memory_mb": 1024}, "resources": {"VCPU": 8, "CUSTOM_X": 1}}
    )
    assert resource_request(spec).unnumbered.resources == {
        "VCPU": 8,
        "MEMORY_MB": 1024,
        "CUSTOM_X": 1,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"flavor": {"vcpus": 1, "memory_mb": 1, "extra_specs": {"trait:X": "maybe"}}}, "required"),
        ({"flavor": {"vcpus": 1, "memory_mb": 1, "extra_specs": {"resources:X": "two"}}}, "whole"),
        ({"resources": {"VCPU": 1}, "required_traits": ["A"], "forbidden_traits": ["A"]}, "both"),
        ({"resources": {}}, "no resources"),
        ({"resources": {"vcpu": 1}}, "pattern"),
        (
            {"resources": {"VCPU": 1}, "num_instances": 2, "consumer_uuids": [str(uuid.uuid4())]},
            "1 entries",
        ),
        ({"resources": {"VCPU": 1}, "unknown": 1}, "Extra inputs"),
    ],
)
def test_invalid_requests_are_refused_with_the_reason(
    body: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ScheduleRequest.model_validate(body)


def test_consumer_uuids_are_generated_one_per_instance() -> None:
    spec = ScheduleRequest.model_validate({"resources": {"VCPU": 1}, "num_instances": 3})
    assert len(set(spec.consumer_uuids)) == 3


def test_num_instances_follows_the_given_consumers() -> None:
    consumers = [str(uuid.uuid4()), str(uuid.uuid4())]
    spec = ScheduleRequest.model_validate({"resources": {"VCPU": 1}, "consumer_uuids": consumers})
    assert spec.num_instances == 2
    assert [str(c) for c in spec.consumer_uuids] == consumers


def test_query_carries_every_group_with_its_traits_aggregates_and_limit() -> None:
    spec = ScheduleRequest.model_validate(
        {
            "resources": {"VCPU": 2, "MEMORY_MB": 4096},
            "required_traits": ["HW_CPU_X86_AVX2"],
            "forbidden_traits": ["COMPUTE_STATUS_DISABLED"],
            "member_of": [[AGG_A, AGG_B], [AGG_A]],
            "granular_groups": [
                {
                    "suffix": "_NET",
                    "resources": {"SRIOV_NET_VF": 1},
                    "required_traits": ["CUSTOM_P"],
                }
            ],
        }
    )
    params = candidates_query(resource_request(spec), limit=50)
    assert params == [
        ("resources", "MEMORY_MB:4096,VCPU:2"),
        ("required", "HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED"),
        ("member_of", f"in:{AGG_A},{AGG_B}"),
        ("member_of", AGG_A),
        ("resources_NET", "SRIOV_NET_VF:1"),
        ("required_NET", "CUSTOM_P"),
        ("limit", "50"),
    ]
    assert query_string(params).startswith("resources=MEMORY_MB:4096,VCPU:2&required=")


def test_a_forced_host_narrows_the_query_to_its_tree() -> None:
    spec = ScheduleRequest.model_validate({"resources": {"VCPU": 1}})
    params = candidates_query(resource_request(spec, in_tree=AGG_A), limit=None)
    assert ("in_tree", AGG_A) in params
