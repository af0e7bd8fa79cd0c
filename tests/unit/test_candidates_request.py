"""Parsing the GET /allocation_candidates query string (pure, no database)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from placement_api import errors
from placement_api.domain.candidates.request import CandidateRequest
from placement_api.microversion import MAX_VERSION, Version
from placement_api.web.candidates_query import parse_request

AGG_A = "8b0a9e24-60c7-4c8c-9d61-0d10e7b0b0a1"
AGG_B = "1f5e0d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
TREE = "5ad5b6d6-9c26-4f44-8a1b-5f4a0c1d2e3f"


def parse(query: str, version: Version = MAX_VERSION) -> CandidateRequest:
    return parse_request(parse_qsl(query, keep_blank_values=True), version)


def refused(query: str, version: Version = MAX_VERSION) -> errors.PlacementError:
    with pytest.raises(errors.BadRequest) as raised:
        parse(query, version)
    return raised.value


def test_unsuffixed_group_carries_every_kind_of_filter() -> None:
    request = parse(
        f"resources=VCPU:2,MEMORY_MB:512&required=HW_CPU_X86_SSE,!CUSTOM_X"
        f"&member_of=in:{AGG_A},{AGG_B}&member_of=!{AGG_B}&in_tree={TREE.upper()}"
    )
    (group,) = request.groups
    assert group.suffix == ""
    assert not group.granular
    assert group.resources == {"VCPU": 2, "MEMORY_MB": 512}
    assert group.required.any_of == [frozenset({"HW_CPU_X86_SSE"})]
    assert group.required.forbidden == {"CUSTOM_X"}
    assert group.member_of.any_of == [frozenset({AGG_A, AGG_B})]
    assert group.member_of.forbidden == {AGG_B}
    assert group.in_tree == TREE


def test_groups_are_keyed_by_suffix_in_order_of_appearance() -> None:
    request = parse("resources2=VCPU:1&resources=DISK_GB:5&resources1=VGPU:1&group_policy=none")
    assert [g.suffix for g in request.groups] == ["2", "", "1"]
    assert [g.granular for g in request.groups] == [True, False, True]


def test_string_suffixes_need_1_33() -> None:
    named = parse("resources_compute=VCPU:1&resources-net=VGPU:1&group_policy=none", Version(1, 33))
    assert {g.suffix for g in named.groups} == {"_compute", "-net"}
    # Before 1.33 such keys are not group keys (the schema refuses them earlier).
    assert parse("resources=VCPU:1&resources_compute=VCPU:1", Version(1, 32)).groups[0].suffix == ""


def test_first_limit_and_first_group_policy_win() -> None:
    request = parse("resources=VCPU:1&limit=10&limit=1&group_policy=isolate&group_policy=none")
    assert request.limit == 10
    assert request.isolate


def test_repeated_required_keeps_only_the_last_before_1_39_and_ands_after() -> None:
    query = "resources=VCPU:1&required=CUSTOM_FOO&required=CUSTOM_BAR"
    assert parse(query, Version(1, 38)).groups[0].required.any_of == [frozenset({"CUSTOM_BAR"})]
    assert parse(query).groups[0].required.any_of == [
        frozenset({"CUSTOM_FOO"}),
        frozenset({"CUSTOM_BAR"}),
    ]


def test_any_traits_syntax_needs_1_39() -> None:
    error = refused("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B", Version(1, 38))
    assert "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since" in error.detail
    request = parse("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B")
    assert request.groups[0].required.any_of == [frozenset({"CUSTOM_A", "CUSTOM_B"})]


def test_root_required_parses_required_and_forbidden_traits() -> None:
    request = parse("resources=VCPU:1&root_required=CUSTOM_A,!CUSTOM_B")
    assert request.root_required == {"CUSTOM_A"}
    assert request.root_forbidden == {"CUSTOM_B"}


def test_root_required_given_twice_is_a_duplicate_key() -> None:
    error = refused("resources=VCPU:1&root_required=CUSTOM_A&root_required=!CUSTOM_B")
    assert error.code == errors.QUERY_DUPLICATE_KEY
    assert error.detail == "Query parameter 'root_required' may be specified only once."


def test_root_required_conflict_is_a_bad_value() -> None:
    error = refused("resources=VCPU:1&root_required=CUSTOM_A,CUSTOM_B,!CUSTOM_A")
    assert error.code == errors.QUERY_BAD_VALUE
    assert (
        error.detail == "Conflicting required and forbidden traits found in root_required: CUSTOM_A"
    )


def test_root_required_has_no_any_traits_syntax() -> None:
    assert "only supported since" in refused("resources=VCPU:1&root_required=in:A,B").detail


def test_group_policy_is_required_with_two_suffixed_groups() -> None:
    error = refused("resources1=VCPU:1&resources2=VCPU:1")
    assert 'The "group_policy" parameter is required' in error.detail
    assert len(parse("resources=VCPU:1&resources1=MEMORY_MB:1").groups) == 2


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("required=FOO&required1=BAR", "orphaned traits keys: required, required1"),
        (f"member_of={AGG_A}&member_of3={AGG_B}", "orphaned member_of keys: member_of, member_of3"),
        (f"resources=VCPU:1&in_tree1={TREE}", "All request groups must specify resources."),
        ("group_policy=isolate", "At least one request group (`resources` or `resources{$S}`)"),
    ],
)
def test_before_1_36_every_group_needs_resources(query: str, message: str) -> None:
    assert message in refused(query, Version(1, 35)).detail


def test_from_1_36_a_resourceless_group_must_be_in_a_same_subtree() -> None:
    request = parse("resources1=VCPU:1&required2=CUSTOM_X&same_subtree=1,2&group_policy=none")
    assert request.same_subtrees == (frozenset({"1", "2"}),)
    assert request.groups[1].resources == {}

    error = refused("resources1=VCPU:1&required2=CUSTOM_X&group_policy=none")
    assert error.code == errors.QUERY_BAD_VALUE
    assert "bad group(s) - ['2']." in error.detail


def test_from_1_36_some_group_must_have_resources() -> None:
    error = refused("required1=CUSTOM_X&same_subtree=1")
    assert error.code == errors.QUERY_MISSING_VALUE
    assert error.detail == "There must be at least one resources or resources[$S] parameter."


def test_same_subtree_names_only_existing_suffixes() -> None:
    error = refused("resources1=VCPU:1&same_subtree=1,9")
    assert error.code == errors.QUERY_BAD_VALUE
    assert "['9'] not found in ['1']" in error.detail


def test_same_subtree_cannot_name_the_unsuffixed_group() -> None:
    error = refused("resources=VCPU:1&resources1=VCPU:1&same_subtree=,1")
    assert error.code == errors.QUERY_BAD_VALUE
    assert "Empty string (unsuffixed group) can not be specified" in error.detail


def test_in_tree_must_be_a_uuid() -> None:
    error = refused("resources=VCPU:1&in_tree=life-is-beautiful")
    assert "Expected 'in_tree' parameter to be a format of uuid" in error.detail


def test_forbidden_member_of_needs_1_32() -> None:
    error = refused(f"resources=VCPU:1&member_of=!{AGG_A}", Version(1, 31))
    assert "Forbidden member_of parameters are not supported" in error.detail


def test_suffixed_member_of_errors_name_their_key() -> None:
    error = refused(f"resources1=VCPU:1&member_of1={AGG_A}&member_of1={AGG_B}", Version(1, 23))
    assert error.detail == "Multiple member_of1 parameters are not supported"


def test_required_and_forbidden_in_one_group_conflict() -> None:
    error = refused("resources1=VCPU:1&required1=CUSTOM_A,!CUSTOM_A")
    assert "following traits keys: required1: (CUSTOM_A)" in error.detail


def test_candidates_are_nested_aware_from_1_29() -> None:
    assert not parse("resources=VCPU:1", Version(1, 28)).nested_aware
    assert parse("resources=VCPU:1", Version(1, 29)).nested_aware


def test_bad_resources_are_refused() -> None:
    assert "Got: empty string." in refused("resources=").detail
    assert "requires amount >= 1" in refused("resources=VCPU:0").detail
