"""Helpers for the tests that run the client against a real Keystone."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.support.keystone import Keystone, User


def register_placement(keystone: Keystone, urls: dict[str, str]) -> str:
    """Placement in the catalog, one endpoint per interface, in a new region of its own
    (so the endpoints other tests register are not found); the region's id."""
    region = f"client-tests-{uuid.uuid4().hex[:8]}"
    admin = {"x-auth-token": keystone.admin_token()}
    with httpx.Client(base_url=keystone.url, headers=admin, timeout=30) as http:
        http.post("/regions", json={"region": {"id": region}}).raise_for_status()
        service = {"type": "placement", "name": f"placement-{region}"}
        made = http.post("/services", json={"service": service})
        made.raise_for_status()
        for interface, url in urls.items():
            endpoint = {
                "service_id": made.json()["service"]["id"],
                "interface": interface,
                "url": url,
                "region_id": region,
            }
            http.post("/endpoints", json={"endpoint": endpoint}).raise_for_status()
    return region


def os_password(
    keystone: Keystone, user: User, project_name: str, region: str, auth_url: str | None = None
) -> dict[str, str]:
    """``OS_*`` variables for password credentials, as an openrc file sets them."""
    return {
        "OS_AUTH_URL": auth_url or keystone.url,
        "OS_USERNAME": user.name,
        "OS_PASSWORD": user.password,
        "OS_PROJECT_NAME": project_name,
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_PROJECT_DOMAIN_NAME": "Default",
        "OS_REGION_NAME": region,
    }


def token_holder(keystone: Keystone, token: str) -> dict[str, Any]:
    """What Keystone says about a token (it raises if the token is not valid)."""
    response = httpx.get(
        f"{keystone.url}/auth/tokens",
        headers={"x-auth-token": keystone.admin_token(), "x-subject-token": token},
        timeout=30,
    )
    response.raise_for_status()
    found: dict[str, Any] = response.json()["token"]
    return found
