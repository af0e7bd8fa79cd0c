"""Numbers past a column's range, numbers that are not finite, and allocation
``mappings`` of every shape upstream's schema refuses: each a 4xx in
Placement's format naming what was wrong, and not one row changed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.allocation_helpers import consumer_body, new_uuid
from tests.api.hostile import (
    Bad,
    Body,
    World,
    allocation,
    assert_refused_without_change,
    build_world,
    send,
)
from tests.support.client import PlacementClient

BIG = 2**31
HUGE = 2**63
MAXIMUM = "is greater than the maximum of 2147483647"


def _inventory(world: World, **fields: Any) -> dict[str, Any]:
    return {"resource_provider_generation": 3, "total": 8, **fields}


INTEGERS = [
    Bad("PUT", "/resource_providers/{rp}/inventories/VCPU", MAXIMUM,
        json=lambda w: _inventory(w, resource_provider_generation=BIG)),
    Bad("PUT", "/resource_providers/{rp}/inventories/VCPU", "is less than the minimum of",
        json=lambda w: _inventory(w, resource_provider_generation=-BIG - 1)),
    Bad("PUT", "/resource_providers/{rp}/inventories", MAXIMUM,
        json=lambda w: {"resource_provider_generation": BIG, "inventories": {}}),
    Bad("POST", "/resource_providers/{rp}/inventories", MAXIMUM,
        json=lambda w: {"resource_class": "MEMORY_MB", "total": 8,
                        "resource_provider_generation": BIG}),
    Bad("PUT", "/resource_providers/{rp}/inventories/VCPU", MAXIMUM,
        json=lambda w: _inventory(w, total=BIG)),
    Bad("PUT", "/resource_providers/{rp}/inventories/VCPU", MAXIMUM,
        json=lambda w: _inventory(w, step_size=HUGE)),
    Bad("PUT", "/resource_providers/{rp}/traits", MAXIMUM,
        json=lambda w: {"resource_provider_generation": BIG, "traits": []}),
    Bad("PUT", "/resource_providers/{rp}/aggregates", MAXIMUM,
        json=lambda w: {"resource_provider_generation": BIG, "aggregates": []}),
    Bad("PUT", "/allocations/{consumer}", MAXIMUM,
        json=lambda w: allocation(w, consumer_generation=BIG)),
    Bad("PUT", "/allocations/{consumer}", "is greater than the maximum of 9223372036854775807",
        json=lambda w: allocation(w, allocations={w.rp: {"resources": {"VCPU": HUGE}}})),
    Bad("POST", "/reshaper", MAXIMUM,
        json=lambda w: {"inventories": {w.rp: {"resource_provider_generation": BIG,
                                               "inventories": {}}}, "allocations": {}}),
    Bad("PUT", "/resource_providers/{rp}/inventories/VCPU", "Exceeds the limit",
        raw='{"resource_provider_generation": 3, "total": ' + "9" * 5000 + "}"),
    # An amount no max_unit allows, but within the column: upstream's 409.
    Bad("PUT", "/allocations/{consumer}", "violate inventory constraints", status=409,
        json=lambda w: allocation(w, allocations={w.rp: {"resources": {"VCPU": HUGE - 1}}})),
    # Amounts whose sum on one provider overflows 64 bits: refused before any SQL.
    Bad("POST", "/allocations", "violate inventory constraints", status=409,
        json=lambda w: _two_consumers(w, HUGE - 1)),
    Bad("POST", "/allocations", "violate inventory constraints", status=409,
        json=lambda w: _two_consumers(w, HUGE // 2 + 1)),
]  # fmt: skip


def _two_consumers(world: World, amount: int) -> dict[str, Any]:
    """Two new consumers, each asking ``amount`` VCPU of the world's provider."""
    return {new_uuid(): consumer_body({world.rp: {"VCPU": amount}}) for _ in range(2)}


QUERY_INTEGERS = [
    Bad("GET", f"/resource_providers?resources=VCPU:{HUGE}", "requires amount <= 2147483647"),
    Bad("GET", f"/resource_providers?resources=VCPU:{BIG}", "requires amount <= 2147483647"),
    Bad("GET", f"/allocation_candidates?resources=VCPU:{HUGE}", "requires amount <= 2147483647"),
    Bad("GET", f"/allocation_candidates?resources1=VCPU:{BIG}&group_policy=none", "VCPU"),
    Bad("GET", "/allocation_candidates?resources=VCPU:" + "9" * 5000, "(5000 characters)"),
    Bad("GET", "/allocation_candidates?resources=VCPU:1&limit=" + "9" * 20, "'limit'"),
    Bad("GET", "/allocation_candidates?resources=VCPU:1&limit=" + "9" * 5000, "'limit'"),
    Bad("GET", "/allocation_candidates?resources=VCPU:1&limit=cow&limit=1", "not a valid limit"),
    Bad(
        "GET",
        "/allocation_candidates?resources1=VCPU:1&resources2=DISK_GB:1"
        "&group_policy=spread&group_policy=none",
        "not a valid group_policy",
    ),
]

RATIO = "/resource_providers/{rp}/inventories/VCPU"
NOT_FINITE = [
    Bad("PUT", RATIO, "-Infinity is not a number JSON allows",
        raw='{"resource_provider_generation": 3, "total": 8, "allocation_ratio": -Infinity}'),
    Bad("PUT", RATIO, "Infinity is not a number JSON allows",
        raw='{"resource_provider_generation": 3, "total": 8, "allocation_ratio": Infinity}'),
    Bad("PUT", RATIO, "NaN is not a number JSON allows",
        raw='{"resource_provider_generation": 3, "total": 8, "allocation_ratio": NaN}'),
    Bad("PUT", RATIO, "the number 1e400 is out of range",
        raw='{"resource_provider_generation": 3, "total": 8, "allocation_ratio": 1e400}'),
    Bad("PUT", RATIO, "the number -1e400 is out of range",
        raw='{"resource_provider_generation": 3, "total": -1e400}'),
    Bad("PUT", RATIO, "is greater than the maximum of 3.40282e+38",
        json=lambda w: _inventory(w, allocation_ratio=1e300)),
]  # fmt: skip

PROVIDER = "12345678-1234-1234-1234-123456789abc"
# Upstream's pattern is unanchored: a key merely holding a suffix character is checked.
MAPPINGS_REFUSED: dict[str, Any] = {
    "null": None,
    "a list": [PROVIDER],
    "a string": PROVIDER,
    "no providers": {"a": []},
    "providers not a list": {"a": PROVIDER},
    "a number for a provider": {"a": [1]},
    "not a uuid": {"a": ["not-a-uuid"]},
    "a key with a space": {"x y": []},
    "a key longer than a suffix": {"s" * 65: "x"},
    # Upstream's schema wants at least one group: "{} should be non-empty".
    "empty": {},
}


def _with_mappings(shape: Any) -> Body:
    return lambda world: allocation(world, mappings=shape)


def _aggregates(uuids: list[str]) -> Body:
    return lambda world: {"resource_provider_generation": 3, "aggregates": uuids}


MAPPINGS = [
    Bad("PUT", "/allocations/{consumer}", "JSON does not validate", json=_with_mappings(shape))
    for shape in MAPPINGS_REFUSED.values()
]

CASES = {
    "integers": INTEGERS,
    "query integers": QUERY_INTEGERS,
    "not finite": NOT_FINITE,
    "mappings": MAPPINGS,
}


@pytest.mark.parametrize("kind", sorted(CASES))
async def test_hostile_numbers_are_refused_and_change_nothing(
    api: PlacementClient, database_url: str, kind: str
) -> None:
    world = await build_world(api)
    for bad in CASES[kind]:
        await assert_refused_without_change(api, database_url, world, bad)


@pytest.mark.parametrize(
    "mappings",
    [{"": "anything"}, {"!!": 5}, {"a": [PROVIDER]}, {"1": [PROVIDER, PROVIDER]}],
    ids=["empty key", "no suffix character", "one", "two"],
)
async def test_mappings_upstream_accepts_are_accepted_and_ignored(
    api: PlacementClient, mappings: dict[str, Any]
) -> None:
    world = await build_world(api)
    bad = Bad("PUT", "/allocations/{consumer}", "", json=lambda w: allocation(w, mappings=mappings))
    response = await send(api, world, bad)
    assert response.status_code == 204, response.text
    shown = (await api.get(f"/allocations/{world.consumer}")).json()
    assert shown["consumer_generation"] == 2
    assert "mappings" not in shown


async def test_an_aggregate_uuid_spelled_longer_than_36_characters_is_refused(
    api: PlacementClient, database_url: str
) -> None:
    world = await build_world(api)
    for spelled in (f"urn:uuid:{PROVIDER}", f"{{{PROVIDER}}}"):
        bad = Bad(
            "PUT",
            "/resource_providers/{rp}/aggregates",
            "is too long",
            json=_aggregates([spelled]),
        )
        await assert_refused_without_change(api, database_url, world, bad)
