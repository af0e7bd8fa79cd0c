"""keystonemiddleware's auth_token in front of the API, against a real Keystone."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from placement_api import errors
from placement_api.auth.keystone import KeystoneAuthenticator
from tests.keystone.conftest import (
    ON_KEYSTONE_WORKER,
    Cloud,
    as_caller,
    keystone_app,
    write_placement_conf,
)
from tests.support.client import PlacementClient

SPOOFED_IDENTITY = {
    "x-roles": "admin,service",
    "x-role": "admin",
    "x-project-id": "spoofed-project",
    "x-tenant-id": "spoofed-project",
    "x-user-id": "spoofed-user",
    "x-service-roles": "service",
    "x-identity-status": "Confirmed",
    "x-is-admin-project": "True",
    "x-domain-id": "default",
    "openstack-system-scope": "all",
}

pytestmark = ON_KEYSTONE_WORKER


@pytest.fixture
def conf(tmp_path: Path, cloud: Cloud) -> Path:
    return write_placement_conf(tmp_path, cloud)


async def test_no_token_is_401_naming_keystone(database_url: str, conf: Path, cloud: Cloud) -> None:
    async with keystone_app(database_url, conf) as http:
        response = await http.get("/resource_providers")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == f'Keystone uri="{cloud.keystone.url}"'
    [error] = response.json()["errors"]
    assert (error["status"], error["title"]) == (401, "Unauthorized")
    assert error["request_id"] == response.headers["x-openstack-request-id"]


async def test_version_document_needs_no_token(database_url: str, conf: Path) -> None:
    async with keystone_app(database_url, conf) as http:
        response = await http.get("/")
    assert response.status_code == 200
    assert response.json()["versions"][0]["id"] == "v1.0"


@pytest.mark.parametrize("token", ["not-a-token", "admin", "admin:admin"])
async def test_invalid_or_noauth2_token_is_401(database_url: str, conf: Path, token: str) -> None:
    async with keystone_app(database_url, conf) as http:
        response = await PlacementClient(http, token=token).get("/resource_providers")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Keystone uri=")


async def test_expired_token_is_401_even_once_cached(
    database_url: str, conf: Path, cloud: Cloud
) -> None:
    lifetime = 8
    async with keystone_app(database_url, conf) as http:
        with cloud.keystone.with_token_expiration(lifetime) as short_lived:
            token = short_lived.token(cloud.keystone.admin, cloud.keystone.admin_project_id)
            issued = time.monotonic()
            client = PlacementClient(http, token=token)
            # The first answer validates (and caches) the token; then it expires.
            first = await client.get("/resource_providers")
        await asyncio.sleep(max(0.0, issued + lifetime + 1 - time.monotonic()))
        second = await client.get("/resource_providers")
    assert first.status_code == 200, first.text
    assert second.status_code == 401


async def test_application_credential_token_is_accepted(
    database_url: str, conf: Path, cloud: Cloud
) -> None:
    ks = cloud.keystone
    credential = ks.create_application_credential(ks.admin, ks.admin_project_id)
    token = ks.application_credential_token(credential)
    async with keystone_app(database_url, conf) as http:
        created = await PlacementClient(http, token=token).post(
            "/resource_providers", json={"name": "by-appcred"}
        )
        listed = await as_caller(http, cloud.callers["admin"]).get("/resource_providers")
    assert created.status_code == 200, created.text
    assert [p["name"] for p in listed.json()["resource_providers"]] == ["by-appcred"]


async def test_spoofed_identity_headers_change_nothing(
    database_url: str, conf: Path, cloud: Cloud
) -> None:
    member = cloud.callers["project_member"]
    async with keystone_app(database_url, conf) as http:
        client = as_caller(http, member)
        created = await client.post(
            "/resource_providers", json={"name": "spoofed"}, headers=SPOOFED_IDENTITY
        )
        stranger_usages = await client.get(
            f"/usages?project_id={cloud.stranger_project_id}", headers=SPOOFED_IDENTITY
        )
        untokened = await http.get("/resource_providers", headers=SPOOFED_IDENTITY)
        listed = await as_caller(http, cloud.callers["admin"]).get("/resource_providers")
    assert created.status_code == 403
    assert stranger_usages.status_code == 403
    assert untokened.status_code == 401
    assert listed.json()["resource_providers"] == []


async def test_context_comes_from_the_tokens_only(conf: Path, cloud: Cloud) -> None:
    ks = cloud.keystone
    member = cloud.callers["project_member"]
    service = cloud.callers["service"]
    authenticator = KeystoneAuthenticator(conf, timeout=10)
    try:
        headers = {
            **SPOOFED_IDENTITY,
            "x-auth-token": member.token,
            "x-service-token": service.token,
        }
        context = await authenticator.authenticate(headers, "req-test")
    finally:
        authenticator.close()
    assert context.project_id == member.project_id
    assert set(context.roles) == {"member", "reader"}
    assert context.system_scope is None
    assert context.user_domain_id == ks.domain_id
    assert context.service_project_id == cloud.service_user.project_id
    assert context.service_user_id == cloud.service_user.id
    assert "service" in context.service_roles


async def test_domain_scoped_token_carries_its_domain(conf: Path, cloud: Cloud) -> None:
    authenticator = KeystoneAuthenticator(conf, timeout=10)
    try:
        headers = {"x-auth-token": cloud.callers["domain_admin"].token}
        context = await authenticator.authenticate(headers, "req-test")
    finally:
        authenticator.close()
    assert (context.domain_id, context.project_id) == (cloud.keystone.domain_id, None)
    assert "admin" in context.roles


async def test_keystone_down_is_503_in_the_error_format(
    database_url: str, conf: Path, cloud: Cloud
) -> None:
    fresh_token = cloud.keystone.token(cloud.keystone.admin, cloud.keystone.admin_project_id)
    async with keystone_app(database_url, conf) as http:
        with cloud.keystone.stopped():
            response = await PlacementClient(http, token=fresh_token).get("/resource_providers")
    assert response.status_code == 503
    [error] = response.json()["errors"]
    assert error["code"] == errors.AUTH_SERVICE_UNAVAILABLE


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung Keystone)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


async def test_hung_keystone_is_503_within_the_timeout(
    database_url: str, tmp_path: Path, cloud: Cloud, silent_port: int
) -> None:
    hung = f"http://127.0.0.1:{silent_port}/v3"
    conf = write_placement_conf(
        tmp_path, cloud, keystone_authtoken={"auth_url": hung, "www_authenticate_uri": hung}
    )
    async with keystone_app(database_url, conf, keystone_timeout=1.0) as http:
        started = time.monotonic()
        response = await PlacementClient(http, token=uuid.uuid4().hex).get("/resource_providers")
        waited = time.monotonic() - started
    assert response.status_code == 503
    assert response.json()["errors"][0]["code"] == errors.AUTH_SERVICE_UNAVAILABLE
    assert waited < 5


@pytest.mark.parametrize("token", [None, "not-a-token"])
async def test_delayed_auth_decision_still_refuses_invalid_tokens(
    database_url: str, tmp_path: Path, cloud: Cloud, token: str | None
) -> None:
    conf = write_placement_conf(tmp_path, cloud, keystone_authtoken={"delay_auth_decision": "true"})
    headers = {**SPOOFED_IDENTITY, **({"x-auth-token": token} if token else {})}
    async with keystone_app(database_url, conf) as http:
        response = await http.get("/resource_providers", headers=headers)
        valid = await as_caller(http, cloud.callers["admin"]).get("/resource_providers")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == f'Keystone uri="{cloud.keystone.url}"'
    assert valid.status_code == 200
