"""Provider inventories over HTTP, on every backend."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sqlalchemy import ColumnElement, and_, select, update

from placement_api.db.engine import create_engine
from placement_api.db.models import Inventory, ResourceClass, ResourceProvider
from placement_api.settings import Settings
from tests.api.allocation_helpers import error, new_uuid, provider_with, put_allocations, usages
from tests.db.allocation_state import usage_drift
from tests.support.client import PlacementClient, error_code


def _url(provider: dict[str, Any], resource_class: str | None = None) -> str:
    base = f"/resource_providers/{provider['uuid']}/inventories"
    return f"{base}/{resource_class}" if resource_class else base


def _detail(response: Any) -> str:
    detail: str = response.json()["errors"][0]["detail"]
    return detail


def _inventory_row(provider: dict[str, Any], resource_class: str) -> ColumnElement[bool]:
    provider_id = select(ResourceProvider.id).where(ResourceProvider.uuid == provider["uuid"])
    class_id = select(ResourceClass.id).where(ResourceClass.name == resource_class)
    return and_(
        Inventory.resource_provider_id == provider_id.scalar_subquery(),
        Inventory.resource_class_id == class_id.scalar_subquery(),
    )


async def _record_usage(
    settings: Settings, provider: dict[str, Any], resource_class: str, used: int
) -> None:
    """Leave the usage an allocation write would: ``inventories.used`` for that class."""
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                update(Inventory).where(_inventory_row(provider, resource_class)).values(used=used)
            )
    finally:
        await engine.dispose()


async def _stored_usage(settings: Settings, provider: dict[str, Any], resource_class: str) -> int:
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as connection:
            used = await connection.scalar(
                select(Inventory.used).where(_inventory_row(provider, resource_class))
            )
    finally:
        await engine.dispose()
    assert used is not None, f"no {resource_class} inventory"
    return used


async def test_put_all_applies_defaults_and_bumps_generation(api: PlacementClient) -> None:
    provider = await api.create_provider()
    response = await api.put(
        _url(provider),
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
    )
    assert response.status_code == 200
    assert response.json() == {
        "resource_provider_generation": 1,
        "inventories": {
            "VCPU": {
                "total": 8,
                "reserved": 0,
                "min_unit": 1,
                "max_unit": 2147483647,
                "step_size": 1,
                "allocation_ratio": 1.0,
            }
        },
    }
    shown = await api.get(f"/resource_providers/{provider['uuid']}")
    assert shown.json()["generation"] == 1


async def test_put_all_adds_changes_and_removes_classes(api: PlacementClient) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    generation = await api.set_inventory(
        provider, {"VCPU": {"total": 16, "allocation_ratio": 4.0}, "MEMORY_MB": {"total": 2048}}
    )
    assert generation == 2
    listing = (await api.get(_url(provider))).json()
    assert set(listing["inventories"]) == {"VCPU", "MEMORY_MB"}
    assert listing["inventories"]["VCPU"]["allocation_ratio"] == 4.0
    assert listing["resource_provider_generation"] == 2


async def test_post_one_returns_absolute_location_and_new_generation(api: PlacementClient) -> None:
    provider = await api.create_provider()
    response = await api.post(_url(provider), json={"resource_class": "DISK_GB", "total": 10})
    assert response.status_code == 201
    assert response.headers["location"] == f"http://placement{_url(provider, 'DISK_GB')}"
    assert response.json()["resource_provider_generation"] == 1
    again = await api.post(_url(provider), json={"resource_class": "DISK_GB", "total": 10})
    assert again.status_code == 409
    assert error_code(again) == "placement.concurrent_update"


async def test_post_checks_a_generation_when_one_is_sent(api: PlacementClient) -> None:
    provider = await api.create_provider()
    body = {"resource_class": "VCPU", "total": 4, "resource_provider_generation": 1}
    stale = await api.post(_url(provider), json=body)
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["conflict"] == "provider_generation"
    current = await api.post(_url(provider), json={**body, "resource_provider_generation": 0})
    assert current.status_code == 201
    assert current.json()["resource_provider_generation"] == 1


async def test_stale_generation_is_a_conflict_that_changes_nothing(api: PlacementClient) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}})
    stale = await api.put(
        _url(provider),
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 99}}},
    )
    assert stale.status_code == 409
    assert error_code(stale) == "placement.concurrent_update"
    assert stale.json()["errors"][0]["conflict"] == "provider_generation"
    stale_one = await api.put(
        _url(provider, "VCPU"), json={"resource_provider_generation": 0, "total": 99}
    )
    assert stale_one.status_code == 409
    current = (await api.get(_url(provider))).json()
    assert current["resource_provider_generation"] == 1
    assert current["inventories"]["VCPU"]["total"] == 8


async def test_reserved_may_equal_total_only_from_1_26(api: PlacementClient) -> None:
    provider = await api.create_provider()
    body = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4, "reserved": 4}}}
    refused = await api.put(_url(provider), json=body, version="1.25")
    assert refused.status_code == 400
    assert "greater than or equal to total" in _detail(refused)
    accepted = await api.put(_url(provider), json=body, version="1.26")
    assert accepted.status_code == 200
    body = {"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4, "reserved": 5}}}
    too_much = await api.put(_url(provider), json=body, version="1.26")
    assert too_much.status_code == 400
    assert "The reserved value is greater than total" in _detail(too_much)


async def test_unknown_resource_class_is_refused_and_changes_nothing(api: PlacementClient) -> None:
    provider = await api.create_provider()
    put_all = await api.put(
        _url(provider),
        json={"resource_provider_generation": 0, "inventories": {"CUSTOM_NOPE": {"total": 1}}},
    )
    assert put_all.status_code == 400
    assert "No such resource class CUSTOM_NOPE" in _detail(put_all)
    post = await api.post(_url(provider), json={"resource_class": "CUSTOM_NOPE", "total": 1})
    assert post.status_code == 400
    put_one = await api.put(
        _url(provider, "CUSTOM_NOPE"), json={"resource_provider_generation": 0, "total": 1}
    )
    assert put_one.status_code == 404
    current = (await api.get(_url(provider))).json()
    assert current == {"resource_provider_generation": 0, "inventories": {}}


async def test_schema_bounds_are_enforced(api: PlacementClient) -> None:
    provider = await api.create_provider()
    for fields in (
        {"total": 0},
        {"total": 2147483648},
        {"total": 1, "step_size": 0},
        {"total": 1, "spam": 1},
    ):
        response = await api.post(_url(provider), json={"resource_class": "VCPU", **fields})
        assert response.status_code == 400, fields
        assert _detail(response).startswith("JSON does not validate")


async def test_put_one_needs_an_existing_inventory(api: PlacementClient) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}})
    response = await api.put(
        _url(provider, "DISK_GB"), json={"resource_provider_generation": 1, "total": 5}
    )
    assert response.status_code == 400
    assert "No inventory record with resource class" in _detail(response)
    changed = await api.put(
        _url(provider, "VCPU"), json={"resource_provider_generation": 1, "total": 12}
    )
    assert changed.status_code == 200
    assert changed.json()["resource_provider_generation"] == 2
    assert changed.json()["total"] == 12


async def test_delete_all_exists_from_1_5_and_always_bumps(api: PlacementClient) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}})
    too_old = await api.delete(_url(provider), version="1.4")
    assert too_old.status_code == 405
    assert (await api.delete(_url(provider), version="1.5")).status_code == 204
    assert (await api.delete(_url(provider), version="1.5")).status_code == 204
    current = (await api.get(_url(provider))).json()
    assert current == {"resource_provider_generation": 3, "inventories": {}}


async def test_delete_one_then_missing_is_404(api: PlacementClient) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 5}})
    assert (await api.delete(_url(provider, "DISK_GB"))).status_code == 204
    again = await api.delete(_url(provider, "DISK_GB"))
    assert again.status_code == 404
    assert "No inventory of class DISK_GB found for delete" in _detail(again)
    assert (await api.get(_url(provider, "DISK_GB"))).status_code == 404


async def test_changing_limits_keeps_the_recorded_usage(
    api: PlacementClient, settings: Settings
) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}})
    await _record_usage(settings, provider, "VCPU", 6)
    await api.set_inventory(provider, {"VCPU": {"total": 6}, "DISK_GB": {"total": 10}})
    assert await _stored_usage(settings, provider, "VCPU") == 6
    assert await _stored_usage(settings, provider, "DISK_GB") == 0


async def test_shrinking_total_below_usage_is_accepted_with_a_warning_and_keeps_usage(
    api: PlacementClient, caplog: pytest.LogCaptureFixture
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    holder = new_uuid()
    assert (await put_allocations(api, holder, {rp: {"VCPU": 6}})).status_code == 204
    provider = {"uuid": rp}
    with caplog.at_level(logging.WARNING, logger="placement_api.domain.inventories"):
        shrink_all = await api.put(
            _url(provider),
            json={"resource_provider_generation": 2, "inventories": {"VCPU": {"total": 5}}},
        )
        assert shrink_all.status_code == 200, shrink_all.text
        shrink_one = await api.put(
            _url(provider, "VCPU"), json={"resource_provider_generation": 3, "total": 4}
        )
        assert shrink_one.status_code == 200, shrink_one.text
    assert [r.getMessage() for r in caplog.records] == [
        f"inventory of VCPU on {rp} is now over capacity: usage 6, capacity 5",
        f"inventory of VCPU on {rp} is now over capacity: usage 6, capacity 4",
    ]
    assert (await api.get(_url(provider))).json()["inventories"]["VCPU"]["total"] == 4
    assert await usages(api, rp) == {"VCPU": 6}


async def test_a_provider_shrunk_below_usage_takes_only_writes_that_do_not_grow_it(
    api: PlacementClient, settings: Settings
) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}})
    holder = new_uuid()
    assert (await put_allocations(api, holder, {rp: {"VCPU": 6}})).status_code == 204
    await api.set_inventory({"uuid": rp}, {"VCPU": {"total": 4}})
    kept = await put_allocations(api, holder, {rp: {"VCPU": 6}}, generation=1)
    assert kept.status_code == 204, kept.text
    grown = await put_allocations(api, holder, {rp: {"VCPU": 7}}, generation=2)
    assert grown.status_code == 409
    assert error(grown)["conflict"] == "capacity"
    newcomer = await put_allocations(api, new_uuid(), {rp: {"VCPU": 1}})
    assert newcomer.status_code == 409
    reduced = await put_allocations(api, holder, {rp: {"VCPU": 5}}, generation=2)
    assert reduced.status_code == 204, reduced.text
    assert await usages(api, rp) == {"VCPU": 5}
    assert await usage_drift(settings) == []


async def test_operator_may_leave_a_provider_over_capacity_by_policy(
    api: PlacementClient, settings: Settings
) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8, "allocation_ratio": 2.0}})
    await _record_usage(settings, provider, "VCPU", 12)
    lowered = await api.put(
        _url(provider, "VCPU"),
        json={"resource_provider_generation": 1, "total": 8, "reserved": 2},
    )
    assert lowered.status_code == 200
    assert lowered.json()["allocation_ratio"] == 1.0
    assert lowered.json()["resource_provider_generation"] == 2


async def test_removing_a_class_in_use_is_refused(api: PlacementClient, settings: Settings) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 10}})
    await _record_usage(settings, provider, "VCPU", 1)
    attempts = [
        await api.put(
            _url(provider),
            json={"resource_provider_generation": 1, "inventories": {"DISK_GB": {"total": 10}}},
        ),
        await api.delete(_url(provider, "VCPU")),
        await api.delete(_url(provider)),
    ]
    for response in attempts:
        assert response.status_code == 409
        assert error_code(response) == "placement.inventory.inuse"
        assert f"Inventory for 'VCPU' on resource provider '{provider['uuid']}' in use" in _detail(
            response
        )
    current = (await api.get(_url(provider))).json()
    assert current["resource_provider_generation"] == 1
    assert set(current["inventories"]) == {"VCPU", "DISK_GB"}


async def test_cache_headers_appear_from_1_15(api: PlacementClient) -> None:
    provider = await api.create_provider()
    await api.set_inventory(provider, {"VCPU": {"total": 8}})
    new = await api.get(_url(provider, "VCPU"), version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")
    old = await api.get(_url(provider), version="1.14")
    assert "last-modified" not in old.headers
    assert "cache-control" not in old.headers


async def test_missing_provider_is_404(api: PlacementClient) -> None:
    missing = {"uuid": "7260669a-e3d4-4867-aaa7-683e2ab6958c"}
    response = await api.get(_url(missing))
    assert response.status_code == 404
    assert f"No resource provider with uuid {missing['uuid']} found" in _detail(response)
    posted = await api.post(_url(missing), json={"resource_class": "VCPU", "total": 1})
    assert posted.status_code == 404
