"""Resource provider lifecycle over HTTP, on every backend."""

from __future__ import annotations

import uuid

from tests.api.allocation_helpers import new_uuid, provider_with, put_allocations
from tests.support.client import PlacementClient, error_code
from tests.support.snapshot import database_snapshot


async def test_create_returns_body_from_1_20_and_location_before(api: PlacementClient) -> None:
    old = await api.post("/resource_providers", json={"name": "old"}, version="1.19")
    assert old.status_code == 201
    assert old.headers["location"].startswith("/resource_providers/")
    assert old.content == b""

    new = await api.post("/resource_providers", json={"name": "new"})
    assert new.status_code == 200
    body = new.json()
    assert body["generation"] == 0
    assert body["root_provider_uuid"] == body["uuid"]
    assert body["parent_provider_uuid"] is None


async def test_duplicate_name_is_a_conflict_and_changes_nothing(api: PlacementClient) -> None:
    await api.create_provider("dup")
    response = await api.post("/resource_providers", json={"name": "dup"})
    assert response.status_code == 409
    assert error_code(response) == "placement.duplicate_name"
    listing = await api.get("/resource_providers")
    assert [p["name"] for p in listing.json()["resource_providers"]] == ["dup"]


async def test_unknown_field_is_rejected_with_schema_message(api: PlacementClient) -> None:
    response = await api.post("/resource_providers", json={"name": "x", "bad_field": 1})
    assert response.status_code == 400
    assert "JSON does not validate" in response.json()["errors"][0]["detail"]
    assert (await api.get("/resource_providers")).json()["resource_providers"] == []


async def test_nested_tree_and_reparenting_rules(api: PlacementClient) -> None:
    root = await api.create_provider("root")
    child = await api.create_provider("child", parent_provider_uuid=root["uuid"])
    grandchild = await api.create_provider("grandchild", parent_provider_uuid=child["uuid"])
    assert grandchild["root_provider_uuid"] == root["uuid"]

    loop = await api.put(
        f"/resource_providers/{root['uuid']}",
        json={"name": "root", "parent_provider_uuid": grandchild["uuid"]},
    )
    assert loop.status_code == 400
    assert "loop" in loop.json()["errors"][0]["detail"]

    old_unparent = await api.put(
        f"/resource_providers/{child['uuid']}",
        json={"name": "child", "parent_provider_uuid": None},
        version="1.36",
    )
    assert old_unparent.status_code == 400

    unparent = await api.put(
        f"/resource_providers/{child['uuid']}", json={"name": "child", "parent_provider_uuid": None}
    )
    assert unparent.status_code == 200
    moved = await api.get(f"/resource_providers/{grandchild['uuid']}")
    assert moved.json()["root_provider_uuid"] == child["uuid"]

    in_tree = await api.get(f"/resource_providers?in_tree={grandchild['uuid']}")
    assert {p["name"] for p in in_tree.json()["resource_providers"]} == {"child", "grandchild"}


async def test_delete_parent_is_refused_until_children_are_gone(api: PlacementClient) -> None:
    parent = await api.create_provider("parent")
    child = await api.create_provider("kid", parent_provider_uuid=parent["uuid"])
    refused = await api.delete(f"/resource_providers/{parent['uuid']}")
    assert refused.status_code == 409
    assert error_code(refused) == "placement.resource_provider.cannot_delete_parent"
    assert (await api.delete(f"/resource_providers/{child['uuid']}")).status_code == 204
    assert (await api.delete(f"/resource_providers/{parent['uuid']}")).status_code == 204
    missing = await api.get(f"/resource_providers/{parent['uuid']}")
    assert missing.status_code == 404


async def test_a_parent_with_allocations_too_answers_cannot_delete_parent(
    api: PlacementClient, database_url: str
) -> None:
    parent = await provider_with(api, {"VCPU": {"total": 8}})
    await api.create_provider("kid", parent_provider_uuid=parent)
    assert (await put_allocations(api, new_uuid(), {parent: {"VCPU": 1}})).status_code == 204
    before = await database_snapshot(database_url)
    refused = await api.delete(f"/resource_providers/{parent}")
    assert refused.status_code == 409
    assert error_code(refused) == "placement.resource_provider.cannot_delete_parent"
    assert await database_snapshot(database_url) == before


async def test_list_rejects_unknown_and_malformed_query(api: PlacementClient) -> None:
    unknown = await api.get("/resource_providers?spam=eggs")
    assert unknown.status_code == 400
    assert "Invalid query string parameters" in unknown.json()["errors"][0]["detail"]
    bad_uuid = await api.get("/resource_providers?uuid=not-a-uuid")
    assert bad_uuid.status_code == 400
    too_new = await api.get(f"/resource_providers?in_tree={uuid.uuid4()}", version="1.13")
    assert too_new.status_code == 400
