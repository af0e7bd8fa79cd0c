"""The client's credentials against a real Keystone: password and application
credentials from ``OS_*`` variables and from a Nova-style ``[placement]`` section,
the endpoint found in the catalog, the token reused, and renewed when it expires.

The catalog points at the real API (the ASGI app); the version document at
``/`` takes any token, so each request shows which token the client sent,
and Keystone says whose it is.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from keystoneauth1 import adapter

from placement_client import AuthenticationFailed, AuthOptions, PlacementClient, load_adapter
from placement_client.auth import from_config_file, from_environment
from tests.client.conftest import Sent
from tests.client.keystone_cloud import os_password, register_placement, token_holder
from tests.support.keystone import Keystone, User

# On the worker that runs the other Keystone tests (one Keystone per worker).
pytestmark = pytest.mark.xdist_group("keystone")

PUBLIC_URL = "http://public.placement.test"
INTERNAL_URL = "http://internal.placement.test"


@dataclass(frozen=True)
class Cloud:
    keystone: Keystone
    region: str
    project_id: str
    project_name: str
    user: User


@pytest.fixture(scope="module")
def cloud(keystone: Keystone) -> Cloud:
    """Placement in the catalog of a region of its own, and a member of a project."""
    region = register_placement(keystone, {"public": PUBLIC_URL, "internal": INTERNAL_URL})
    project_name = f"project-{uuid.uuid4().hex[:8]}"
    project_id = keystone.create_project(project_name)
    user = keystone.user_with_roles("member", project_id=project_id)
    return Cloud(keystone, region, project_id, project_name, user)


def password_variables(cloud: Cloud, auth_url: str | None = None) -> dict[str, str]:
    return os_password(cloud.keystone, cloud.user, cloud.project_name, cloud.region, auth_url)


async def send_three(ks_adapter: adapter.Adapter, placement_app: Any) -> Sent:
    sent = Sent()
    client = PlacementClient(
        ks_adapter,
        transport=httpx.ASGITransport(app=placement_app),
        event_hooks={"request": [sent]},
    )
    async with client:
        for _ in range(3):
            assert (await client.get("/"))["versions"][0]["max_version"] == "1.39"
    return sent


def tokens(sent: Sent) -> list[str]:
    return [r.headers["x-auth-token"] for r in sent.requests if "x-auth-token" in r.headers]


async def test_os_password_variables_find_the_catalog_endpoint_and_reuse_one_token(
    cloud: Cloud, placement_app
) -> None:
    sent = await send_three(from_environment(password_variables(cloud)), placement_app)
    assert {f"http://{r.url.host}" for r in sent.requests} == {PUBLIC_URL}
    assert len(tokens(sent)) == 3
    assert len(set(tokens(sent))) == 1
    holder = token_holder(cloud.keystone, tokens(sent)[0])
    assert holder["user"]["id"] == cloud.user.id
    assert holder["project"]["id"] == cloud.project_id


async def test_os_system_scope_gives_a_system_scoped_token(cloud: Cloud, placement_app) -> None:
    variables = {
        "OS_AUTH_URL": cloud.keystone.url,
        "OS_USERNAME": cloud.keystone.admin.name,
        "OS_PASSWORD": cloud.keystone.admin.password,
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_SYSTEM_SCOPE": "all",
        "OS_REGION_NAME": cloud.region,
    }
    sent = await send_three(from_environment(variables), placement_app)
    holder = token_holder(cloud.keystone, tokens(sent)[0])
    assert holder["system"] == {"all": True}
    assert "project" not in holder


async def test_os_application_credential_variables_authenticate_with_it(
    cloud: Cloud, placement_app
) -> None:
    credential = cloud.keystone.create_application_credential(cloud.user, cloud.project_id)
    variables = {
        "OS_AUTH_URL": cloud.keystone.url,
        "OS_APPLICATION_CREDENTIAL_ID": credential.id,
        "OS_APPLICATION_CREDENTIAL_SECRET": credential.secret,
        "OS_REGION_NAME": cloud.region,
    }
    sent = await send_three(load_adapter(AuthOptions(), variables), placement_app)
    holder = token_holder(cloud.keystone, tokens(sent)[0])
    assert "application_credential" in holder["methods"]
    assert holder["application_credential"]["id"] == credential.id


def placement_section(path: Path, **options: str) -> Path:
    path.write_text("[placement]\n" + "".join(f"{k} = {v}\n" for k, v in options.items()))
    return path


async def test_a_nova_style_placement_section_uses_its_interface_and_region(
    cloud: Cloud, placement_app, tmp_path: Path
) -> None:
    config = placement_section(
        tmp_path / "agent.conf",
        auth_type="v3password",
        auth_url=cloud.keystone.url,
        username=cloud.user.name,
        password=cloud.user.password,
        project_name=cloud.project_name,
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=cloud.region,
        valid_interfaces="internal",
    )
    sent = await send_three(from_config_file(config, "placement"), placement_app)
    assert {f"http://{r.url.host}" for r in sent.requests} == {INTERNAL_URL}
    assert token_holder(cloud.keystone, tokens(sent)[0])["user"]["id"] == cloud.user.id


async def test_an_application_credential_section_with_an_endpoint_override(
    cloud: Cloud, placement_app, tmp_path: Path
) -> None:
    credential = cloud.keystone.create_application_credential(cloud.user, cloud.project_id)
    config = placement_section(
        tmp_path / "scheduler.conf",
        auth_type="v3applicationcredential",
        auth_url=cloud.keystone.url,
        application_credential_id=credential.id,
        application_credential_secret=credential.secret,
        endpoint_override="http://override.placement.test",
    )
    sent = await send_three(from_config_file(config, "placement"), placement_app)
    assert {r.url.host for r in sent.requests} == {"override.placement.test"}
    holder = token_holder(cloud.keystone, tokens(sent)[0])
    assert holder["application_credential"]["id"] == credential.id


async def test_a_token_about_to_expire_is_renewed_before_it_is_sent(
    cloud: Cloud, placement_app
) -> None:
    # Tokens of this Keystone last 60 s: less than keystoneauth1's two-minute margin,
    # so each request finds the last token about to expire and gets a new one.
    with cloud.keystone.with_token_expiration(60) as short_lived:
        variables = password_variables(cloud, auth_url=short_lived.url)
        sent = await send_three(from_environment(variables), placement_app)
        for token in tokens(sent):
            assert token_holder(short_lived, token)["user"]["id"] == cloud.user.id
    assert len(set(tokens(sent))) == 3


async def test_a_wrong_password_fails_before_anything_reaches_placement(
    cloud: Cloud, placement_app
) -> None:
    variables = password_variables(cloud) | {"OS_PASSWORD": "wrong"}
    sent = Sent()
    client = PlacementClient(
        from_environment(variables),
        transport=httpx.ASGITransport(app=placement_app),
        event_hooks={"request": [sent]},
    )
    async with client:
        with pytest.raises(AuthenticationFailed, match="cannot find the Placement endpoint"):
            await client.get("/resource_providers")
    assert sent.requests == []
