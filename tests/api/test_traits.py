"""Traits over HTTP: the trait catalogue, provider trait sets and trait filters."""

from __future__ import annotations

import asyncio
from typing import Any

from httpx import Response

from tests.support.client import PlacementClient, error_code

HTTP_DATE = r"^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$"


def detail(response: Response) -> str:
    text: str = response.json()["errors"][0]["detail"]
    return text


async def custom_traits(api: PlacementClient) -> list[str]:
    response = await api.get("/traits?name=startswith:CUSTOM_")
    assert response.status_code == 200, response.text
    names: list[str] = response.json()["traits"]
    return names


async def create_traits(api: PlacementClient, *names: str) -> None:
    for name in names:
        response = await api.put(f"/traits/{name}")
        assert response.status_code == 201, response.text


async def provider_traits(api: PlacementClient, provider: dict[str, Any]) -> dict[str, Any]:
    response = await api.get(f"/resource_providers/{provider['uuid']}/traits")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def set_traits(
    api: PlacementClient, provider: dict[str, Any], traits: list[str], generation: int
) -> Response:
    return await api.put(
        f"/resource_providers/{provider['uuid']}/traits",
        json={"traits": traits, "resource_provider_generation": generation},
    )


async def test_trait_routes_do_not_exist_before_1_6(api: PlacementClient) -> None:
    provider = await api.create_provider()
    assert (await api.get("/traits", version="1.5")).status_code == 404
    assert (await api.put("/traits/CUSTOM_OLD", version="1.5")).status_code == 404
    assert (await api.get("/traits/HW_CPU_X86_SSE", version="1.5")).status_code == 404
    traits_path = f"/resource_providers/{provider['uuid']}/traits"
    assert (await api.get(traits_path, version="1.5")).status_code == 404
    assert (await api.get("/traits/CUSTOM_OLD")).status_code == 404


async def test_put_trait_creates_once_then_reports_it_exists(api: PlacementClient) -> None:
    created = await api.put("/traits/CUSTOM_GOLD", version="1.6")
    assert created.status_code == 201
    assert created.headers["location"] == "/traits/CUSTOM_GOLD"
    assert "content-type" not in created.headers
    assert "last-modified" not in created.headers

    again = await api.put("/traits/CUSTOM_GOLD", version="1.15")
    assert again.status_code == 204
    assert again.headers["location"] == "/traits/CUSTOM_GOLD"
    assert again.headers["cache-control"] == "no-cache"
    assert again.headers["last-modified"].endswith(" GMT")

    shown = await api.get("/traits/CUSTOM_GOLD", version="1.14")
    assert shown.status_code == 204
    assert "last-modified" not in shown.headers
    assert (await api.get("/traits/CUSTOM_GOLD", version="1.15")).headers["cache-control"] == (
        "no-cache"
    )
    assert await custom_traits(api) == ["CUSTOM_GOLD"]


async def test_put_refuses_standard_and_malformed_names(api: PlacementClient) -> None:
    for name in ("HW_CPU_X86_SSE", "TRAIT_X", "CUSTOM_lower", "CUSTOM_ABC:1", "CUSTOM_"):
        response = await api.put(f"/traits/{name}")
        assert response.status_code == 400, name
        assert detail(response).startswith("The trait is invalid.")
    too_long = "CUSTOM_" + "A" * 249
    assert (await api.put(f"/traits/{too_long}")).status_code == 400
    assert await custom_traits(api) == []
    assert (await api.put(f"/traits/{too_long[:-1]}")).status_code == 201


async def test_delete_trait_refuses_standard_unknown_and_in_use(api: PlacementClient) -> None:
    standard = await api.delete("/traits/HW_CPU_X86_SSE")
    assert standard.status_code == 400
    assert detail(standard) == "Cannot delete standard trait HW_CPU_X86_SSE."
    unknown = await api.delete("/traits/CUSTOM_NOPE")
    assert unknown.status_code == 404
    assert detail(unknown) == "No such trait(s): CUSTOM_NOPE."

    await create_traits(api, "CUSTOM_USED")
    provider = await api.create_provider()
    assert (await set_traits(api, provider, ["CUSTOM_USED"], 0)).status_code == 200
    in_use = await api.delete("/traits/CUSTOM_USED")
    assert in_use.status_code == 409
    assert detail(in_use) == "The trait CUSTOM_USED is in use by a resource provider."
    assert await custom_traits(api) == ["CUSTOM_USED"]

    cleared = await api.delete(f"/resource_providers/{provider['uuid']}/traits")
    assert cleared.status_code == 204
    deleted = await api.delete("/traits/CUSTOM_USED")
    assert deleted.status_code == 204
    assert "last-modified" not in deleted.headers
    assert await custom_traits(api) == []


async def test_list_traits_filters_by_name_and_association(api: PlacementClient) -> None:
    await create_traits(api, "CUSTOM_A1", "CUSTOM_A2", "CUSTOM_B1")
    provider = await api.create_provider()
    assert (await set_traits(api, provider, ["CUSTOM_A1", "HW_CPU_X86_SSE"], 0)).status_code == 200

    async def names(query: str) -> list[str]:
        response = await api.get(f"/traits?{query}")
        assert response.status_code == 200, response.text
        found: list[str] = response.json()["traits"]
        return found

    assert await names("name=in:CUSTOM_A2,CUSTOM_B1,CUSTOM_NONE") == ["CUSTOM_A2", "CUSTOM_B1"]
    assert await names("name=startswith:CUSTOM_A") == ["CUSTOM_A1", "CUSTOM_A2"]
    assert await names("name=startswith:custom_a") == []
    assert await names("associated=true") == ["CUSTOM_A1", "HW_CPU_X86_SSE"]
    assert await names("associated=FALSE&name=startswith:CUSTOM_") == ["CUSTOM_A2", "CUSTOM_B1"]
    everything = await names("")
    assert {"CUSTOM_A1", "HW_CPU_X86_SSE", "MISC_SHARES_VIA_AGGREGATE"} <= set(everything)


async def test_list_traits_rejects_malformed_queries(api: PlacementClient) -> None:
    bad_name = await api.get("/traits?name=in_abc")
    assert bad_name.status_code == 400
    assert detail(bad_name) == (
        "Badly formatted name parameter. Expected name query string parameter in form: "
        '?name=[in|startswith]:[name1,name2|prefix]. Got: "in_abc"'
    )
    bad_associated = await api.get("/traits?associated=yes")
    assert bad_associated.status_code == 400
    assert detail(bad_associated) == (
        'The query parameter "associated" only accepts "true" or "false"'
    )
    unknown = await api.get("/traits?invalid=abc")
    assert unknown.status_code == 400
    assert detail(unknown).startswith(
        "Invalid query string parameters: Additional properties are not allowed"
    )


async def test_list_traits_cache_headers_from_1_15(api: PlacementClient) -> None:
    old = await api.get("/traits", version="1.14")
    assert "last-modified" not in old.headers
    assert "cache-control" not in old.headers
    new = await api.get("/traits", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


async def test_provider_traits_replace_the_set_and_bump_the_generation(
    api: PlacementClient,
) -> None:
    await create_traits(api, "CUSTOM_A", "CUSTOM_B", "CUSTOM_C")
    provider = await api.create_provider()
    assert await provider_traits(api, provider) == {
        "traits": [],
        "resource_provider_generation": 0,
    }

    first = await set_traits(api, provider, ["CUSTOM_B", "CUSTOM_A"], 0)
    assert first.status_code == 200
    assert first.json() == {"traits": ["CUSTOM_A", "CUSTOM_B"], "resource_provider_generation": 1}

    second = await set_traits(api, provider, ["CUSTOM_C", "CUSTOM_B"], 1)
    assert second.json()["resource_provider_generation"] == 2
    assert await provider_traits(api, provider) == {
        "traits": ["CUSTOM_B", "CUSTOM_C"],
        "resource_provider_generation": 2,
    }
    shown = await api.get(f"/resource_providers/{provider['uuid']}")
    assert shown.json()["generation"] == 2


async def test_stale_generation_is_a_conflict_that_changes_nothing(api: PlacementClient) -> None:
    await create_traits(api, "CUSTOM_A", "CUSTOM_B")
    provider = await api.create_provider()
    assert (await set_traits(api, provider, ["CUSTOM_A"], 0)).status_code == 200

    stale = await set_traits(api, provider, ["CUSTOM_B"], 0)
    assert stale.status_code == 409
    assert error_code(stale) == "placement.concurrent_update"
    assert detail(stale) == (
        "Resource provider's generation already changed. Please update the generation and "
        "try again."
    )
    assert await provider_traits(api, provider) == {
        "traits": ["CUSTOM_A"],
        "resource_provider_generation": 1,
    }


async def test_unknown_traits_are_refused_and_change_nothing(api: PlacementClient) -> None:
    await create_traits(api, "CUSTOM_A")
    provider = await api.create_provider()
    assert (await set_traits(api, provider, ["CUSTOM_A"], 0)).status_code == 200

    refused = await set_traits(api, provider, ["CUSTOM_NOPE1", "CUSTOM_A", "CUSTOM_NOPE2"], 1)
    assert refused.status_code == 400
    assert detail(refused) == "No such trait CUSTOM_NOPE1, CUSTOM_NOPE2"
    assert await provider_traits(api, provider) == {
        "traits": ["CUSTOM_A"],
        "resource_provider_generation": 1,
    }


async def test_provider_traits_body_is_validated(api: PlacementClient) -> None:
    provider = await api.create_provider()
    path = f"/resource_providers/{provider['uuid']}/traits"
    cases = [
        ({"traits": []}, "'resource_provider_generation' is a required property"),
        ({"traits": [], "resource_provider_generation": "x"}, "'x' is not of type 'integer'"),
        ({"traits": "A", "resource_provider_generation": 0}, "'A' is not of type 'array'"),
        (
            {"traits": [], "resource_provider_generation": 0, "extra": 1},
            "Additional properties are not allowed",
        ),
    ]
    for body, message in cases:
        response = await api.put(path, json=body)
        assert response.status_code == 400
        assert message in detail(response)
    assert (await provider_traits(api, provider))["resource_provider_generation"] == 0


async def test_unknown_provider_is_not_found_on_every_trait_route(api: PlacementClient) -> None:
    path = "/resource_providers/f0aab2a1-0a3c-4bc1-9c0d-6f5e1c8f0f7e/traits"
    listed = await api.get(path)
    assert listed.status_code == 404
    assert detail(listed).startswith(
        "No resource provider with uuid f0aab2a1-0a3c-4bc1-9c0d-6f5e1c8f0f7e found"
    )
    body = {"traits": [], "resource_provider_generation": 0}
    assert (await api.put(path, json=body)).status_code == 404
    assert (await api.delete(path)).status_code == 404


async def test_delete_provider_traits_bumps_the_generation(api: PlacementClient) -> None:
    await create_traits(api, "CUSTOM_A")
    provider = await api.create_provider()
    assert (await set_traits(api, provider, ["CUSTOM_A"], 0)).status_code == 200
    assert (await api.delete(f"/resource_providers/{provider['uuid']}/traits")).status_code == 204
    assert await provider_traits(api, provider) == {
        "traits": [],
        "resource_provider_generation": 2,
    }


async def test_concurrent_creation_of_one_trait_yields_one_201(api: PlacementClient) -> None:
    responses = await asyncio.gather(*(api.put("/traits/CUSTOM_RACE") for _ in range(6)))
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201, 204, 204, 204, 204, 204]
    assert await custom_traits(api) == ["CUSTOM_RACE"]


async def test_concurrent_writers_with_one_generation_one_wins(api: PlacementClient) -> None:
    await create_traits(api, "CUSTOM_A", "CUSTOM_B")
    provider = await api.create_provider()
    responses = await asyncio.gather(
        set_traits(api, provider, ["CUSTOM_A"], 0), set_traits(api, provider, ["CUSTOM_B"], 0)
    )
    assert sorted(response.status_code for response in responses) == [200, 409]
    winner = next(response for response in responses if response.status_code == 200)
    assert await provider_traits(api, provider) == winner.json()


async def traited_providers(api: PlacementClient) -> dict[str, dict[str, Any]]:
    """left: SSE+AVX, middle: AVX+MMX, right: MMX+CUSTOM_FOO, bare: none."""
    await create_traits(api, "CUSTOM_FOO")
    layout = {
        "left": ["HW_CPU_X86_SSE", "HW_CPU_X86_AVX"],
        "middle": ["HW_CPU_X86_AVX", "HW_CPU_X86_MMX"],
        "right": ["HW_CPU_X86_MMX", "CUSTOM_FOO"],
        "bare": [],
    }
    made = {}
    for name, traits in layout.items():
        made[name] = await api.create_provider(name)
        assert (await set_traits(api, made[name], traits, 0)).status_code == 200
    return made


async def listed(api: PlacementClient, query: str, version: str | None = None) -> list[str]:
    response = await api.get(f"/resource_providers?{query}", version=version)
    assert response.status_code == 200, response.text
    return sorted(p["name"] for p in response.json()["resource_providers"])


async def test_required_filters_providers_with_and_or_and_not(api: PlacementClient) -> None:
    await traited_providers(api)
    assert await listed(api, "required=HW_CPU_X86_AVX") == ["left", "middle"]
    assert await listed(api, "required=HW_CPU_X86_AVX,HW_CPU_X86_MMX") == ["middle"]
    assert await listed(api, "required=!HW_CPU_X86_AVX") == ["bare", "right"]
    assert await listed(api, "required=in:HW_CPU_X86_SSE,CUSTOM_FOO") == ["left", "right"]
    both = "required=in:HW_CPU_X86_SSE,HW_CPU_X86_MMX&required=HW_CPU_X86_AVX,!HW_CPU_X86_SSE"
    assert await listed(api, both) == ["middle"]
    # A trait both required and forbidden simply matches nothing here.
    assert await listed(api, "required=HW_CPU_X86_AVX,!HW_CPU_X86_AVX") == []


async def test_repeated_required_means_the_last_one_before_1_39(api: PlacementClient) -> None:
    await traited_providers(api)
    query = "required=HW_CPU_X86_SSE&required=CUSTOM_FOO"
    assert await listed(api, query, version="1.38") == ["right"]
    assert await listed(api, query) == []


async def test_required_syntax_depends_on_the_microversion(api: PlacementClient) -> None:
    cases = [
        (
            "1.21",
            "required=!HW_CPU_X86_SSE",
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !HW_CPU_X86_SSE",
        ),
        (
            "1.38",
            "required=in:HW_CPU_X86_SSE,CUSTOM_FOO",
            "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
            "supported since microversion 1.39. Got: in:HW_CPU_X86_SSE,CUSTOM_FOO",
        ),
        (
            "1.39",
            "required=in:HW_CPU_X86_SSE,!CUSTOM_FOO",
            "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does "
            "not support forbidden traits. Got: in:HW_CPU_X86_SSE,!CUSTOM_FOO",
        ),
        (
            "1.39",
            "required=HW_CPU_X86_SSE,,CUSTOM_FOO",
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: HW_CPU_X86_SSE,,CUSTOM_FOO",
        ),
        (
            "1.39",
            "required=!",
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: !",
        ),
        (
            "1.39",
            "required=HW_CPU_X86_SSE,CUSTOM_NOPE,CUSTOM_ALSO_NOPE",
            'Invalid trait(s) in "required" parameter: No such trait(s): CUSTOM_NOPE.',
        ),
    ]
    for version, query, message in cases:
        response = await api.get(f"/resource_providers?{query}", version=version)
        assert response.status_code == 400, query
        assert detail(response) == message
