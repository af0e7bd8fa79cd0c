"""Malformed allocation writes: an error in Placement's format and no change at all."""

from __future__ import annotations

from typing import Any

import pytest

from placement_api.settings import Settings
from tests.api.allocation_helpers import (
    PROJECT,
    USER,
    consumer_body,
    error,
    generation,
    held,
    new_uuid,
    provider_with,
    put_allocations,
    usages,
)
from tests.db.allocation_state import usage_drift
from tests.support.client import PlacementClient


async def _state(api: PlacementClient, rp: str, consumer: str) -> tuple[Any, ...]:
    listed = (await api.get(f"/resource_providers/{rp}/allocations")).json()
    return (await generation(api, rp), await usages(api, rp), await held(api, consumer), listed)


def _one(rp: str, amounts: dict[str, Any]) -> dict[str, Any]:
    body = consumer_body({})
    body["allocations"] = {rp: {"resources": amounts}}
    return body


BAD_BODIES = {
    "zero amount": lambda rp: _one(rp, {"VCPU": 0}),
    "negative amount": lambda rp: _one(rp, {"VCPU": -1}),
    "fractional amount": lambda rp: _one(rp, {"VCPU": 1.5}),
    "string amount": lambda rp: _one(rp, {"VCPU": "1"}),
    "lower-case class": lambda rp: _one(rp, {"vcpu": 1}),
    "no resources": lambda rp: _one(rp, {}),
    "provider key not a uuid": lambda rp: _one("not-a-provider", {"VCPU": 1}),
    "project id a number": lambda rp: {**_one(rp, {"VCPU": 1}), "project_id": 42},
    "user id empty": lambda rp: {**_one(rp, {"VCPU": 1}), "user_id": ""},
    "missing consumer generation": lambda rp: {
        key: value for key, value in _one(rp, {"VCPU": 1}).items() if key != "consumer_generation"
    },
    "generation a string": lambda rp: {**_one(rp, {"VCPU": 1}), "consumer_generation": "1"},
    "unknown field": lambda rp: {**_one(rp, {"VCPU": 1}), "spare": True},
    "list format at 1.38": lambda rp: {
        **consumer_body({}),
        "allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}],
    },
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
async def test_schema_violations_are_400_and_change_nothing(
    api: PlacementClient, case: str
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    await put_allocations(api, consumer, {rp: {"VCPU": 2}})
    before = await _state(api, rp, consumer)
    response = await api.put(f"/allocations/{consumer}", json=BAD_BODIES[case](rp))
    assert response.status_code == 400, response.text
    assert error(response)["detail"].startswith("JSON does not validate")
    assert await _state(api, rp, consumer) == before


async def test_unknown_provider_and_class_are_400_and_change_nothing(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    await put_allocations(api, consumer, {rp: {"VCPU": 2}})
    before = await _state(api, rp, consumer)
    ghost = new_uuid()

    no_provider = await put_allocations(
        api, consumer, {rp: {"VCPU": 1}, ghost: {"VCPU": 1}}, generation=1
    )
    assert no_provider.status_code == 400
    assert (
        f"Allocation for resource provider '{ghost}' that does not exist."
        in error(no_provider)["detail"]
    )
    no_class = await put_allocations(api, consumer, {rp: {"CUSTOM_NOPE": 1}}, generation=1)
    assert no_class.status_code == 400
    assert error(no_class)["detail"] == (
        f"Unable to allocate inventory for consumer {consumer}: No such resource class CUSTOM_NOPE."
    )
    assert await _state(api, rp, consumer) == before
    assert await usage_drift(settings) == []


async def test_malformed_consumer_uuid_is_400(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    response = await put_allocations(api, "not-a-uuid", {rp: {"VCPU": 1}})
    assert response.status_code == 400
    assert "Malformed consumer_uuid: not-a-uuid" in error(response)["detail"]
    post = await api.post("/allocations", json={"-" * 36: consumer_body({rp: {"VCPU": 1}})})
    assert post.status_code == 400
    assert await usages(api, rp) == {"VCPU": 0}


async def test_a_provider_listed_twice_in_the_list_format_is_400(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 8}})
    consumer = new_uuid()
    body = {
        "allocations": [
            {"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}},
            {"resource_provider": {"uuid": rp}, "resources": {"DISK_GB": 1}},
        ],
        "project_id": PROJECT,
        "user_id": USER,
    }
    response = await api.put(f"/allocations/{consumer}", json=body, version="1.8")
    assert response.status_code == 400
    assert "more than once" in error(response)["detail"]
    assert await usages(api, rp) == {"VCPU": 0, "DISK_GB": 0}


async def test_dict_shape_before_1_12_and_owner_before_1_8_are_refused(
    api: PlacementClient,
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    consumer = new_uuid()
    dict_body = {
        "allocations": {rp: {"resources": {"VCPU": 1}}},
        "project_id": PROJECT,
        "user_id": USER,
    }
    assert (
        await api.put(f"/allocations/{consumer}", json=dict_body, version="1.11")
    ).status_code == 400
    listed = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}]}
    with_owner = {**listed, "project_id": PROJECT, "user_id": USER}
    assert (
        await api.put(f"/allocations/{consumer}", json=with_owner, version="1.7")
    ).status_code == 400
    assert (
        await api.put(f"/allocations/{consumer}", json=listed, version="1.8")
    ).status_code == 400
    assert await usages(api, rp) == {"VCPU": 0}
