"""Resource classes over HTTP, on every backend."""

from __future__ import annotations

from typing import Any

import os_resource_classes

from tests.support.client import PlacementClient

OLD_RENAME = "1.6"


def _detail(response: Any) -> str:
    detail: str = response.json()["errors"][0]["detail"]
    return detail


async def _names(api: PlacementClient) -> list[str]:
    listing = await api.get("/resource_classes")
    assert listing.status_code == 200
    return [rc["name"] for rc in listing.json()["resource_classes"]]


async def test_routes_do_not_exist_before_1_2(api: PlacementClient) -> None:
    assert (await api.get("/resource_classes", version="1.1")).status_code == 404
    assert (await api.get("/resource_classes/VCPU", version="1.1")).status_code == 404
    wrong_type = await api.post(
        "/resource_classes",
        content=b"x",
        headers={"content-type": "text/plain"},
        version="1.1",
    )
    assert wrong_type.status_code == 404


async def test_list_holds_every_standard_class_then_custom_ones(api: PlacementClient) -> None:
    created = await api.post("/resource_classes", json={"name": "CUSTOM_GOLD"})
    assert created.status_code == 201
    assert await _names(api) == [*os_resource_classes.STANDARDS, "CUSTOM_GOLD"]


async def test_create_then_show_and_duplicate_conflicts(api: PlacementClient) -> None:
    created = await api.post("/resource_classes", json={"name": "CUSTOM_SILVER"})
    assert created.status_code == 201
    assert created.headers["location"] == "/resource_classes/CUSTOM_SILVER"
    assert "content-type" not in created.headers
    shown = await api.get("/resource_classes/CUSTOM_SILVER")
    assert shown.json() == {
        "name": "CUSTOM_SILVER",
        "links": [{"rel": "self", "href": "/resource_classes/CUSTOM_SILVER"}],
    }
    again = await api.post("/resource_classes", json={"name": "CUSTOM_SILVER"})
    assert again.status_code == 409
    assert "Conflicting resource class already exists: CUSTOM_SILVER" in _detail(again)


async def test_names_must_be_custom_and_well_formed(api: PlacementClient) -> None:
    for name in ("VCPU", "IRON_NFV", "CUSTOM_lower", "CUSTOM_" + "X" * 249):
        response = await api.post("/resource_classes", json={"name": name})
        assert response.status_code == 400, name
        assert _detail(response).startswith("JSON does not validate")
    assert await _names(api) == list(os_resource_classes.STANDARDS)


async def test_unknown_class_is_404(api: PlacementClient) -> None:
    response = await api.get("/resource_classes/CUSTOM_NOPE")
    assert response.status_code == 404
    assert "No such resource class CUSTOM_NOPE" in _detail(response)


async def test_put_from_1_7_creates_once_then_confirms(api: PlacementClient) -> None:
    first = await api.put("/resource_classes/CUSTOM_COW", version="1.7")
    assert first.status_code == 201
    assert first.headers["location"] == "/resource_classes/CUSTOM_COW"
    second = await api.put("/resource_classes/CUSTOM_COW", version="1.7")
    assert second.status_code == 204
    standard = await api.put("/resource_classes/VCPU", version="1.7")
    assert standard.status_code == 400
    assert "Failed validating 'pattern'" in _detail(standard)
    assert (await _names(api)).count("CUSTOM_COW") == 1


async def test_put_before_1_7_renames_and_inventory_follows(api: PlacementClient) -> None:
    await api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    provider = await api.create_provider()
    await api.set_inventory(provider, {"CUSTOM_OLD": {"total": 3}})
    renamed = await api.put(
        "/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version=OLD_RENAME
    )
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "CUSTOM_NEW"
    assert (await api.get("/resource_classes/CUSTOM_OLD")).status_code == 404
    inventories = await api.get(f"/resource_providers/{provider['uuid']}/inventories")
    assert inventories.json()["inventories"]["CUSTOM_NEW"]["total"] == 3


async def test_rename_refuses_standard_classes_and_taken_names(api: PlacementClient) -> None:
    await api.post("/resource_classes", json={"name": "CUSTOM_A"})
    await api.post("/resource_classes", json={"name": "CUSTOM_B"})
    standard = await api.put(
        "/resource_classes/VCPU", json={"name": "CUSTOM_C"}, version=OLD_RENAME
    )
    assert standard.status_code == 400
    assert "Cannot update standard resource class VCPU" in _detail(standard)
    taken = await api.put(
        "/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B"}, version=OLD_RENAME
    )
    assert taken.status_code == 409
    assert "Resource class already exists: CUSTOM_B" in _detail(taken)
    assert await _names(api) == [*os_resource_classes.STANDARDS, "CUSTOM_A", "CUSTOM_B"]


async def test_delete_refuses_standard_and_in_use_classes(api: PlacementClient) -> None:
    standard = await api.delete("/resource_classes/VCPU")
    assert standard.status_code == 400
    assert "Cannot delete standard resource class VCPU" in _detail(standard)

    await api.put("/resource_classes/CUSTOM_GOLD")
    provider = await api.create_provider()
    await api.set_inventory(provider, {"CUSTOM_GOLD": {"total": 5}})
    in_use = await api.delete("/resource_classes/CUSTOM_GOLD")
    assert in_use.status_code == 409
    assert "Class is in use in inventory" in _detail(in_use)
    assert (await api.get("/resource_classes/CUSTOM_GOLD")).status_code == 200

    await api.delete(f"/resource_providers/{provider['uuid']}/inventories/CUSTOM_GOLD")
    assert (await api.delete("/resource_classes/CUSTOM_GOLD")).status_code == 204
    assert (await api.delete("/resource_classes/CUSTOM_GOLD")).status_code == 404


async def test_cache_headers_appear_from_1_15(api: PlacementClient) -> None:
    new = await api.get("/resource_classes/VCPU", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")
    old = await api.get("/resource_classes", version="1.14")
    assert "last-modified" not in old.headers
