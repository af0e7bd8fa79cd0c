"""What each kind of Keystone token may do, route family by route family.

The expectations are upstream Placement's policy defaults
(``placement/policies/*.py``: every rule project scoped; admin-or-service
everywhere but the reshaper, which is service only under the new defaults,
and total usages, open to readers of the project asked about), under
oslo.policy's behaviour (scope checked) and with scope unchecked, in both
``enforce_new_defaults`` modes. Writes are checked in the database too.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from httpx import AsyncClient

from tests.keystone.conftest import (
    ON_KEYSTONE_WORKER,
    Caller,
    Cloud,
    as_caller,
    keystone_app,
    write_placement_conf,
)
from tests.support.client import PlacementClient

ADMIN_OR_SERVICE = {"admin", "service"}
# Each reads its own project's usages (Keystone's role implications make a
# member a reader too).
PROJECT_READERS = {"project_member", "project_reader", "other_project_reader"}
FAMILIES = (
    "providers:read",
    "providers:write",
    "inventories:read",
    "inventories:write",
    "allocations:write",
    "allocations:read",
    "provider_usages",
    "usages:own_project",
    "usages:other_project",
    "reshaper",
    "candidates",
    "traits",
)
CALLERS = (
    "admin",
    "service",
    "project_member",
    "project_reader",
    "other_project_reader",
    "system_admin",
    "system_reader",
    "domain_admin",
)
MODES = {
    "secure": {"enforce_new_defaults": True, "enforce_scope": True},
    "legacy": {"enforce_new_defaults": False, "enforce_scope": True},
    "secure_unscoped": {"enforce_new_defaults": True, "enforce_scope": False},
    "legacy_unscoped": {"enforce_new_defaults": False, "enforce_scope": False},
}

pytestmark = ON_KEYSTONE_WORKER


def expected_allowed(mode: str, family: str) -> set[str]:
    """Who upstream's policy lets through, for ``mode`` and ``family``."""
    scoped = MODES[mode]["enforce_scope"]
    # Unscoped, a token is judged by roles only: the system and domain
    # admins hold the admin role; the system reader holds reader only.
    admins = ADMIN_OR_SERVICE if scoped else ADMIN_OR_SERVICE | {"system_admin", "domain_admin"}
    if family == "reshaper":
        if MODES[mode]["enforce_new_defaults"]:
            return {"service"}
        return admins
    if family == "usages:own_project":
        return admins | PROJECT_READERS
    return admins


async def _provider(admin: PlacementClient) -> dict[str, Any]:
    provider = await admin.create_provider()
    await admin.set_inventory(provider, {"VCPU": {"total": 64}})
    return provider


async def _generation(admin: PlacementClient, provider: str) -> int:
    found: int = (await admin.get(f"/resource_providers/{provider}")).json()["generation"]
    return found


async def _statuses(
    http: AsyncClient, cloud: Cloud, caller: Caller, admin: PlacementClient
) -> dict[str, int]:
    """The status of one request per family, made as ``caller``."""
    client = as_caller(http, caller)
    provider = await _provider(admin)
    rp = provider["uuid"]
    existing_consumer = str(uuid.uuid4())
    project = caller.project_id or cloud.stranger_project_id
    claim = {
        "allocations": {rp: {"resources": {"VCPU": 1}}},
        "project_id": project,
        "user_id": str(uuid.uuid4()),
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    assert (await admin.put(f"/allocations/{existing_consumer}", json=claim)).status_code == 204
    generation = await _generation(admin, rp)
    reshape = {
        "inventories": {
            rp: {
                "resource_provider_generation": generation,
                "inventories": {"VCPU": {"total": 32}},
            }
        },
        "allocations": {},
    }
    requests: dict[str, tuple[str, str, Any]] = {
        "providers:read": ("GET", "/resource_providers", None),
        "providers:write": ("POST", "/resource_providers", {"name": f"rp-{uuid.uuid4().hex}"}),
        "inventories:read": ("GET", f"/resource_providers/{rp}/inventories", None),
        "inventories:write": (
            "PUT",
            f"/resource_providers/{rp}/inventories/VCPU",
            {"resource_provider_generation": generation, "total": 48},
        ),
        "allocations:write": ("PUT", f"/allocations/{uuid.uuid4()}", claim),
        "allocations:read": ("GET", f"/allocations/{existing_consumer}", None),
        "provider_usages": ("GET", f"/resource_providers/{rp}/usages", None),
        "usages:own_project": ("GET", f"/usages?project_id={project}", None),
        "usages:other_project": ("GET", f"/usages?project_id={cloud.stranger_project_id}", None),
        "reshaper": ("POST", "/reshaper", reshape),
        "candidates": ("GET", "/allocation_candidates?resources=VCPU:1", None),
        "traits": ("GET", "/traits", None),
    }
    statuses: dict[str, int] = {}
    for family, (method, path, body) in requests.items():
        if family == "reshaper":
            # The inventory write above may have moved the generation on.
            body["inventories"][rp]["resource_provider_generation"] = await _generation(admin, rp)
        response = await client.request(method, path, json=body)
        assert response.status_code < 300 or response.status_code == 403, response.text
        statuses[family] = response.status_code
    return statuses


@pytest.mark.parametrize("mode", MODES)
async def test_each_caller_gets_what_upstream_policy_gives(
    database_url: str, tmp_path: Path, cloud: Cloud, mode: str
) -> None:
    conf = write_placement_conf(tmp_path, cloud)
    async with keystone_app(database_url, conf, **MODES[mode]) as http:
        admin = as_caller(http, cloud.callers["admin"])
        allowed: dict[str, set[str]] = {family: set() for family in FAMILIES}
        for name in CALLERS:
            statuses = await _statuses(http, cloud, cloud.callers[name], admin)
            for family, status in statuses.items():
                if status < 300:
                    allowed[family].add(name)
        # What the writes left: one provider per set-up plus one per allowed create.
        providers = (await admin.get("/resource_providers")).json()["resource_providers"]
    assert allowed == {family: expected_allowed(mode, family) for family in FAMILIES}
    assert len(providers) == len(CALLERS) + len(allowed["providers:write"])
