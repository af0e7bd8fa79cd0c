"""Provider aggregates over HTTP: both body shapes, generations and member_of filters."""

from __future__ import annotations

import asyncio
from typing import Any

from httpx import Response

from tests.support.client import PlacementClient, error_code

AGG_A = "f918801a-5e54-4bee-9095-09a9d0c786b8"
AGG_B = "a893eb5c-e2a0-4251-ab26-f71d3b0cfc0b"
AGG_C = "282d469e-29e2-4a8a-8f2e-31b3202b696a"


def detail(response: Response) -> str:
    text: str = response.json()["errors"][0]["detail"]
    return text


def path(provider: dict[str, Any]) -> str:
    return f"/resource_providers/{provider['uuid']}/aggregates"


async def generation(api: PlacementClient, provider: dict[str, Any]) -> int:
    response = await api.get(f"/resource_providers/{provider['uuid']}")
    value: int = response.json()["generation"]
    return value


async def aggregates_of(api: PlacementClient, provider: dict[str, Any]) -> list[str]:
    response = await api.get(path(provider))
    assert response.status_code == 200, response.text
    uuids: list[str] = response.json()["aggregates"]
    return uuids


async def set_aggregates(
    api: PlacementClient, provider: dict[str, Any], uuids: list[str], generation: int
) -> Response:
    body = {"aggregates": uuids, "resource_provider_generation": generation}
    return await api.put(path(provider), json=body)


async def test_aggregate_routes_do_not_exist_at_1_0(api: PlacementClient) -> None:
    provider = await api.create_provider()
    assert (await api.get(path(provider), version="1.0")).status_code == 404
    assert (await api.put(path(provider), json=[AGG_A], version="1.0")).status_code == 404
    assert await aggregates_of(api, provider) == []


async def test_before_1_19_a_bare_list_neither_checks_nor_bumps_generation(
    api: PlacementClient,
) -> None:
    provider = await api.create_provider()
    response = await api.put(path(provider), json=[AGG_A, AGG_B], version="1.1")
    assert response.status_code == 200
    assert response.json() == {"aggregates": [AGG_A, AGG_B]}
    assert "last-modified" not in response.headers
    assert await generation(api, provider) == 0

    listed = await api.get(path(provider), version="1.18")
    assert list(listed.json()) == ["aggregates"]
    assert sorted(listed.json()["aggregates"]) == sorted([AGG_A, AGG_B])
    assert listed.headers["cache-control"] == "no-cache"


async def test_from_1_19_the_generation_is_checked_and_bumped(api: PlacementClient) -> None:
    provider = await api.create_provider()
    response = await set_aggregates(api, provider, [AGG_B, AGG_A], 0)
    assert response.status_code == 200
    assert response.json() == {"aggregates": [AGG_B, AGG_A], "resource_provider_generation": 1}
    assert response.headers["last-modified"].endswith(" GMT")

    listed = (await api.get(path(provider))).json()
    assert sorted(listed["aggregates"]) == sorted([AGG_A, AGG_B])
    assert listed["resource_provider_generation"] == 1

    replaced = await set_aggregates(api, provider, [AGG_C], 1)
    assert replaced.json()["resource_provider_generation"] == 2
    assert await aggregates_of(api, provider) == [AGG_C]
    assert await generation(api, provider) == 2


async def test_stale_generation_is_a_conflict_that_changes_nothing(api: PlacementClient) -> None:
    provider = await api.create_provider()
    assert (await set_aggregates(api, provider, [AGG_A], 0)).status_code == 200
    stale = await set_aggregates(api, provider, [], 0)
    assert stale.status_code == 409
    assert error_code(stale) == "placement.concurrent_update"
    assert await aggregates_of(api, provider) == [AGG_A]
    assert await generation(api, provider) == 1


async def test_bodies_are_validated_per_microversion(api: PlacementClient) -> None:
    provider = await api.create_provider()
    new_shape = {"aggregates": [AGG_A], "resource_provider_generation": 0}
    cases: list[tuple[Any, str, str]] = [
        ([AGG_A], "1.19", "is not of type 'object'"),
        (new_shape, "1.18", "is not of type 'array'"),
        ({"aggregates": [AGG_A]}, "1.19", "'resource_provider_generation' is a required"),
        ({"aggregates": ["harry"], "resource_provider_generation": 0}, "1.19", "is not a 'uuid'"),
        ([AGG_A, AGG_A], "1.1", "has non-unique elements"),
    ]
    for body, version, message in cases:
        response = await api.put(path(provider), json=body, version=version)
        assert response.status_code == 400, body
        assert detail(response).startswith("JSON does not validate")
        assert message in detail(response)
    assert await aggregates_of(api, provider) == []
    assert await generation(api, provider) == 0


async def test_unknown_provider_is_reported_before_the_body(api: PlacementClient) -> None:
    missing = "/resource_providers/6984bb2d-830d-4c8d-ac64-c5a8103664be/aggregates"
    assert (await api.get(missing)).status_code == 404
    response = await api.put(missing, json=[])
    assert response.status_code == 404
    assert detail(response) == (
        "No resource provider with uuid 6984bb2d-830d-4c8d-ac64-c5a8103664be found"
    )


async def test_concurrent_first_use_of_one_aggregate_succeeds_for_all(
    api: PlacementClient,
) -> None:
    members = [await api.create_provider() for _ in range(4)]
    orders = [[AGG_A, AGG_B], [AGG_B, AGG_A]]
    responses = await asyncio.gather(
        *(set_aggregates(api, p, orders[i % 2], 0) for i, p in enumerate(members))
    )
    assert [response.status_code for response in responses] == [200] * 4
    in_both = await api.get(f"/resource_providers?member_of={AGG_A}&member_of={AGG_B}")
    assert len(in_both.json()["resource_providers"]) == 4


async def member_layout(api: PlacementClient) -> None:
    """one: A+C, two: A+B, three: none."""
    for name, uuids in (("one", [AGG_A, AGG_C]), ("two", [AGG_A, AGG_B]), ("three", [])):
        provider = await api.create_provider(name)
        assert (await set_aggregates(api, provider, uuids, 0)).status_code == 200


async def listed(api: PlacementClient, query: str, version: str | None = None) -> list[str]:
    response = await api.get(f"/resource_providers?{query}", version=version)
    assert response.status_code == 200, response.text
    return sorted(p["name"] for p in response.json()["resource_providers"])


async def test_member_of_filters_with_any_all_and_forbidden(api: PlacementClient) -> None:
    await member_layout(api)
    assert await listed(api, f"member_of={AGG_B}", version="1.3") == ["two"]
    assert await listed(api, f"member_of=in:{AGG_B},{AGG_C}") == ["one", "two"]
    assert await listed(api, f"member_of={AGG_A}&member_of=in:{AGG_B},{AGG_C}") == ["one", "two"]
    assert await listed(api, f"member_of={AGG_B}&member_of={AGG_C}") == []
    assert await listed(api, f"member_of=!{AGG_C}") == ["three", "two"]
    assert await listed(api, f"member_of=!in:{AGG_B},{AGG_C}") == ["three"]
    assert await listed(api, f"member_of=!{AGG_C}&member_of={AGG_A}") == ["two"]
    unused = "83a3d69d-8920-48e2-8914-cadfd8fa2f91"
    assert await listed(api, f"member_of={unused}") == []


async def test_member_of_syntax_depends_on_the_microversion(api: PlacementClient) -> None:
    cases = [
        ("1.2", f"member_of={AGG_A}", "Invalid query string parameters"),
        (
            "1.23",
            f"member_of={AGG_A}&member_of={AGG_B}",
            "Multiple member_of parameters are not supported",
        ),
        (
            "1.31",
            f"member_of=!{AGG_A}",
            "Forbidden member_of parameters are not supported in the specified microversion",
        ),
        (
            "1.39",
            f"member_of={AGG_A},{AGG_B}",
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword "
            f"using the valid microversion. Got: {AGG_A},{AGG_B}",
        ),
        (
            "1.39",
            f"member_of=in:{AGG_A},!{AGG_B}",
            "Invalid query string parameters: Expected 'member_of' parameter to contain valid "
            f"UUID(s). Got: !{AGG_B}",
        ),
        (
            "1.31",
            "member_of=!not-a-uuid",
            "Invalid query string parameters: Expected 'member_of' parameter to contain valid "
            "UUID(s). Got: not-a-uuid",
        ),
    ]
    for version, query, message in cases:
        response = await api.get(f"/resource_providers?{query}", version=version)
        assert response.status_code == 400, query
        assert detail(response).startswith(message)
