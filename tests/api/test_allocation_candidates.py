"""GET /allocation_candidates over HTTP, on every backend: parameters, errors,
response shapes by microversion, capacity.

Layout: cn1 and cn2 are compute nodes in aggregate "a"; cn1 has the SSE
traits, cn2 has local disk; ss is a sharing disk provider in "a"; cn3 stands
alone in aggregate "b".
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.client import PlacementClient, error_code
from tests.support.index_answers import settings_of_both_paths
from tests.support.provider_trees import TreeBuilder

# Every request here is answered with the provider index on (as shipped) and off.
settings = settings_of_both_paths

COMPUTE = {
    "VCPU": {"total": 24, "allocation_ratio": 16.0},
    "MEMORY_MB": {"total": 131072, "allocation_ratio": 1.5, "reserved": 2048},
}
REQUEST = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100"


@pytest.fixture
async def cloud(api: PlacementClient) -> TreeBuilder:
    tree = TreeBuilder(api)
    await tree.provider(
        "cn1", inventory=COMPUTE, traits=["HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"], aggregates=["a"]
    )
    await tree.provider(
        "cn2", inventory={**COMPUTE, "DISK_GB": {"total": 2000, "reserved": 100}}, aggregates=["a"]
    )
    await tree.provider(
        "ss",
        inventory={"DISK_GB": {"total": 2000, "reserved": 100}},
        traits=["MISC_SHARES_VIA_AGGREGATE"],
        aggregates=["a"],
    )
    await tree.provider("cn3", inventory={**COMPUTE, "DISK_GB": 500}, aggregates=["b"])
    return tree


def candidates(tree: TreeBuilder, body: dict[str, Any]) -> list[dict[str, dict[str, int]]]:
    """Each allocation request as {provider name: resources} (1.12+ shape)."""
    return [
        {tree.name_of(uuid): alloc["resources"] for uuid, alloc in request["allocations"].items()}
        for request in body["allocation_requests"]
    ]


def summary_names(tree: TreeBuilder, body: dict[str, Any]) -> set[str]:
    return {tree.name_of(uuid) for uuid in body["provider_summaries"]}


async def get_ok(api: PlacementClient, path: str, version: str | None = None) -> dict[str, Any]:
    response = await api.get(path, version=version)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_route_exists_from_1_10(api: PlacementClient) -> None:
    assert (await api.get(REQUEST, version="1.9")).status_code == 404
    assert (await api.get(REQUEST, version="1.10")).status_code == 200


async def test_every_way_to_meet_the_request_is_listed(
    api: PlacementClient, cloud: TreeBuilder
) -> None:
    body = await get_ok(api, REQUEST)
    compute = {"VCPU": 1, "MEMORY_MB": 1024}
    found = candidates(cloud, body)
    assert len(found) == 4
    for expected in (
        {"cn1": compute, "ss": {"DISK_GB": 100}},
        {"cn2": {**compute, "DISK_GB": 100}},
        {"cn2": compute, "ss": {"DISK_GB": 100}},
        {"cn3": {**compute, "DISK_GB": 100}},
    ):
        assert expected in found
    assert summary_names(cloud, body) == {"cn1", "cn2", "cn3", "ss"}
    cn2 = body["provider_summaries"][cloud.uuids["cn2"]]
    assert cn2["resources"] == {
        "VCPU": {"capacity": 384, "used": 0},
        "MEMORY_MB": {"capacity": 193536, "used": 0},
        "DISK_GB": {"capacity": 1900, "used": 0},
    }


async def test_allocation_requests_are_lists_before_1_12(
    api: PlacementClient, cloud: TreeBuilder
) -> None:
    body = await get_ok(api, "/allocation_candidates?resources=DISK_GB:100", version="1.11")
    shapes = [
        {cloud.name_of(a["resource_provider"]["uuid"]): a["resources"] for a in r["allocations"]}
        for r in body["allocation_requests"]
    ]
    assert sorted(shapes, key=str) == [
        {"cn2": {"DISK_GB": 100}},
        {"cn3": {"DISK_GB": 100}},
        {"ss": {"DISK_GB": 100}},
    ]


async def test_mappings_from_1_34(api: PlacementClient, cloud: TreeBuilder) -> None:
    path = (
        "/allocation_candidates?resources=VCPU:1&resources_disk=DISK_GB:10&in_tree="
        + (cloud.uuids["cn1"])
    )
    old = await get_ok(api, path, version="1.33")
    assert "mappings" not in old["allocation_requests"][0]
    (request,) = (await get_ok(api, path))["allocation_requests"]
    assert request["mappings"] == {"": [cloud.uuids["cn1"]], "_disk": [cloud.uuids["ss"]]}


async def test_summary_fields_by_microversion(api: PlacementClient, cloud: TreeBuilder) -> None:
    path = "/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_SSE"
    cn1 = cloud.uuids["cn1"]
    v1_17 = (await get_ok(api, path, version="1.17"))["provider_summaries"][cn1]
    assert v1_17 == {
        "resources": {"VCPU": {"capacity": 384, "used": 0}},
        "traits": ["HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"],
    }
    v1_27 = (await get_ok(api, path, version="1.27"))["provider_summaries"][cn1]
    assert set(v1_27["resources"]) == {"VCPU", "MEMORY_MB"}
    v1_29 = (await get_ok(api, path, version="1.29"))["provider_summaries"][cn1]
    assert v1_29["parent_provider_uuid"] is None
    assert v1_29["root_provider_uuid"] == cn1
    v1_16 = await get_ok(api, "/allocation_candidates?resources=VCPU:1", "1.16")
    assert "traits" not in v1_16["provider_summaries"][cn1]


async def test_cache_headers_from_1_15(api: PlacementClient, cloud: TreeBuilder) -> None:
    old = await api.get(REQUEST, version="1.14")
    assert "last-modified" not in old.headers
    new = await api.get(REQUEST, version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith("GMT")


async def test_limit_returns_that_many_and_summarises_only_them(
    api: PlacementClient, cloud: TreeBuilder
) -> None:
    body = await get_ok(api, REQUEST + "&limit=1")
    (only,) = candidates(cloud, body)
    assert summary_names(cloud, body) == set(only)
    # The first of repeated limits counts.
    assert len((await get_ok(api, REQUEST + "&limit=3&limit=1"))["allocation_requests"]) == 3


@pytest.mark.parametrize("limit", ["cow", "-99", "0"])
async def test_limit_must_be_a_positive_integer(api: PlacementClient, limit: str) -> None:
    response = await api.get(f"{REQUEST}&limit={limit}")
    assert response.status_code == 400
    assert "Failed validating 'pattern'" in response.json()["errors"][0]["detail"]


async def test_parameters_need_their_microversion(api: PlacementClient) -> None:
    cases = [
        ("limit=5", "1.15", "'limit' was unexpected"),
        ("required=HW_CPU_X86_SSE", "1.16", "'required' was unexpected"),
        ("resources1=VCPU:1", "1.24", "'resources1' was unexpected"),
        ("root_required=HW_CPU_X86_SSE", "1.34", "'root_required' does not match any of"),
        ("same_subtree=1", "1.35", "'same_subtree' does not match any of"),
    ]
    for extra, version, message in cases:
        response = await api.get(f"{REQUEST}&{extra}", version=version)
        assert response.status_code == 400, extra
        assert message in response.json()["errors"][0]["detail"]


async def test_resources_are_required_before_1_25(api: PlacementClient) -> None:
    response = await api.get("/allocation_candidates", version="1.24")
    assert response.status_code == 400
    assert "'resources' is a required property" in response.json()["errors"][0]["detail"]


async def test_unknown_names_are_bad_requests(api: PlacementClient, cloud: TreeBuilder) -> None:
    unknown_class = await api.get("/allocation_candidates?resources=MCPU:99")
    assert unknown_class.status_code == 400
    assert unknown_class.json()["errors"][0]["detail"] == (
        "Invalid resource class in resources parameter: No such resource class MCPU."
    )
    unknown_trait = await api.get(REQUEST + "&required=CUSTOM_NOPE")
    assert unknown_trait.status_code == 400
    assert unknown_trait.json()["errors"][0]["detail"] == "No such trait(s): CUSTOM_NOPE."
    unknown_root = await api.get(REQUEST + "&root_required=!CUSTOM_NOPE")
    assert "No such trait(s): CUSTOM_NOPE" in unknown_root.json()["errors"][0]["detail"]


async def test_unknown_aggregates_and_trees_match_nothing(
    api: PlacementClient, cloud: TreeBuilder
) -> None:
    stranger = "7c6d2a55-7f25-4b0b-9b31-0f8a7e2c1d00"
    for extra in (f"member_of={stranger}", f"in_tree={stranger}"):
        body = await get_ok(api, f"{REQUEST}&{extra}")
        assert body == {"allocation_requests": [], "provider_summaries": {}}


async def test_root_required_twice_is_a_duplicate_key(api: PlacementClient) -> None:
    response = await api.get(REQUEST + "&root_required=HW_CPU_X86_SSE&root_required=!CUSTOM_X")
    assert response.status_code == 400
    assert error_code(response) == "placement.query.duplicate_key"


async def test_group_policy_is_needed_with_two_suffixed_groups(api: PlacementClient) -> None:
    response = await api.get("/allocation_candidates?resources1=VCPU:1&resources2=DISK_GB:1")
    assert response.status_code == 400
    assert '"group_policy" parameter is required' in response.json()["errors"][0]["detail"]


async def test_required_forbidden_and_any_of_traits(
    api: PlacementClient, cloud: TreeBuilder
) -> None:
    with_sse = candidates(cloud, await get_ok(api, REQUEST + "&required=HW_CPU_X86_SSE"))
    assert with_sse == [{"cn1": {"VCPU": 1, "MEMORY_MB": 1024}, "ss": {"DISK_GB": 100}}]
    without = candidates(cloud, await get_ok(api, REQUEST + "&required=!HW_CPU_X86_SSE"))
    assert {name for c in without for name in c} == {"cn2", "cn3", "ss"}
    any_of = "&required=in:HW_CPU_X86_SSE,MISC_SHARES_VIA_AGGREGATE"
    # The sharing provider's trait counts: it is one of the candidate's providers.
    assert len(candidates(cloud, await get_ok(api, REQUEST + any_of))) == 2


async def test_member_of_any_all_and_forbidden(api: PlacementClient, cloud: TreeBuilder) -> None:
    a, b = cloud.aggregate("a"), cloud.aggregate("b")
    in_a = candidates(cloud, await get_ok(api, f"{REQUEST}&member_of={a}"))
    assert len(in_a) == 3
    assert all("cn3" not in c for c in in_a)
    either = await get_ok(api, f"{REQUEST}&member_of=in:{a},{b}")
    assert len(either["allocation_requests"]) == 4
    both = await get_ok(api, f"{REQUEST}&member_of={a}&member_of={b}")
    assert both["allocation_requests"] == []
    not_a = candidates(cloud, await get_ok(api, f"{REQUEST}&member_of=!{a}"))
    assert not_a == [{"cn3": {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 100}}]


async def test_capacity_counts_usage_reserved_and_unit_limits(
    api: PlacementClient, cloud: TreeBuilder
) -> None:
    await cloud.provider(
        "small",
        inventory={
            "VGPU": {"total": 8, "reserved": 2, "min_unit": 2, "max_unit": 4, "step_size": 2}
        },
    )
    await cloud.allocate({"small": {"VGPU": 2}})

    async def fits(amount: int) -> bool:
        path = f"/allocation_candidates?resources=VGPU:{amount}"
        return bool((await get_ok(api, path))["allocation_requests"])

    assert [await fits(n) for n in (1, 2, 3, 4, 6)] == [False, True, False, True, False]
    await cloud.allocate({"small": {"VGPU": 2}})
    assert not await fits(4)  # (8 - 2) - 4 used leaves 2
    assert await fits(2)
    body = await get_ok(api, "/allocation_candidates?resources=VGPU:2")
    summary = body["provider_summaries"][cloud.uuids["small"]]
    assert summary["resources"]["VGPU"] == {"capacity": 6, "used": 4}
