"""Usages per provider and per project/user/consumer type, on every backend.

Upstream Placement answers 500 on PostgreSQL for the consumer-type grouping
(it groups by one column and selects another); these run on PostgreSQL too.
"""

from __future__ import annotations

from tests.api.allocation_helpers import (
    PROJECT,
    error,
    new_uuid,
    provider_with,
    put_allocations,
    usages,
)
from tests.support.client import PlacementClient

OTHER_PROJECT = "project-b"


async def _populate(api: PlacementClient) -> str:
    """Five consumers in PROJECT (two users, three types) and one elsewhere."""
    rp = await provider_with(
        api, {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 500}}
    )
    await put_allocations(api, new_uuid(), {rp: {"VCPU": 2, "MEMORY_MB": 1024}})
    await put_allocations(api, new_uuid(), {rp: {"VCPU": 4, "MEMORY_MB": 2048}}, user="user-b")
    await put_allocations(api, new_uuid(), {rp: {"DISK_GB": 50}}, consumer_type="MIGRATION")
    untyped = {
        "allocations": {rp: {"resources": {"VCPU": 1}}},
        "project_id": PROJECT,
        "user_id": "user-a",
        "consumer_generation": None,
    }
    assert (
        await api.put(f"/allocations/{new_uuid()}", json=untyped, version="1.37")
    ).status_code == 204
    assert (
        await api.put(f"/allocations/{new_uuid()}", json=untyped, version="1.37")
    ).status_code == 204
    await put_allocations(api, new_uuid(), {rp: {"VCPU": 8}}, project=OTHER_PROJECT)
    return rp


async def test_provider_usages_list_every_inventory_class(api: PlacementClient) -> None:
    rp = await provider_with(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    assert await usages(api, rp) == {"VCPU": 0, "DISK_GB": 0}
    await put_allocations(api, new_uuid(), {rp: {"VCPU": 3}})
    response = await api.get(f"/resource_providers/{rp}/usages")
    assert response.json() == {
        "resource_provider_generation": 2,
        "usages": {"VCPU": 3, "DISK_GB": 0},
    }
    assert "last-modified" in response.headers
    assert (
        "last-modified"
        not in (await api.get(f"/resource_providers/{rp}/usages", version="1.14")).headers
    )
    missing = await api.get(f"/resource_providers/{new_uuid()}/usages")
    assert missing.status_code == 404


async def test_project_and_user_totals_before_consumer_types(api: PlacementClient) -> None:
    await _populate(api)
    project = await api.get(f"/usages?project_id={PROJECT}", version="1.37")
    assert project.json() == {"usages": {"VCPU": 8, "MEMORY_MB": 3072, "DISK_GB": 50}}
    user = await api.get(f"/usages?project_id={PROJECT}&user_id=user-b", version="1.9")
    assert user.json() == {"usages": {"VCPU": 4, "MEMORY_MB": 2048}}
    nobody = await api.get("/usages?project_id=nobody", version="1.9")
    assert nobody.json() == {"usages": {}}


async def test_totals_by_consumer_type_count_each_consumer_once(api: PlacementClient) -> None:
    await _populate(api)
    grouped = (await api.get(f"/usages?project_id={PROJECT}")).json()["usages"]
    assert grouped == {
        "INSTANCE": {"consumer_count": 2, "VCPU": 6, "MEMORY_MB": 3072},
        "MIGRATION": {"consumer_count": 1, "DISK_GB": 50},
        "unknown": {"consumer_count": 2, "VCPU": 2},
    }
    everything = (await api.get(f"/usages?project_id={PROJECT}&consumer_type=all")).json()
    assert everything == {
        "usages": {"all": {"consumer_count": 5, "VCPU": 8, "MEMORY_MB": 3072, "DISK_GB": 50}}
    }
    untyped = (await api.get(f"/usages?project_id={PROJECT}&consumer_type=unknown")).json()
    assert untyped == {"usages": {"unknown": {"consumer_count": 2, "VCPU": 2}}}
    one_type = (
        await api.get(f"/usages?project_id={PROJECT}&user_id=user-b&consumer_type=INSTANCE")
    ).json()
    assert one_type == {"usages": {"INSTANCE": {"consumer_count": 1, "VCPU": 4, "MEMORY_MB": 2048}}}
    for absent in ("ALL", "UNKNOWN", "PONY"):
        assert (await api.get(f"/usages?project_id={PROJECT}&consumer_type={absent}")).json() == {
            "usages": {}
        }


async def test_total_usages_query_is_validated(api: PlacementClient) -> None:
    assert (await api.get(f"/usages?project_id={PROJECT}", version="1.8")).status_code == 404
    cases = {
        "/usages": "'project_id' is a required property",
        "/usages?project_id=": "Failed validating 'minLength'",
        f"/usages?project_id={'x' * 256}": "Failed validating 'maxLength'",
        f"/usages?project_id={PROJECT}&user_id=": "Failed validating 'minLength'",
        f"/usages?project_id={PROJECT}&spare=1": "Additional properties are not allowed",
        f"/usages?project_id={PROJECT}&consumer_type=lower": "does not match",
    }
    for path, message in cases.items():
        response = await api.get(path)
        assert response.status_code == 400, path
        assert message in error(response)["detail"], path
    too_early = await api.get(f"/usages?project_id={PROJECT}&consumer_type=all", version="1.37")
    assert too_early.status_code == 400
