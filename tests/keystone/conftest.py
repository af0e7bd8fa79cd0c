"""A real Keystone, callers with real tokens, and the API behind keystonemiddleware.

Every test here shares one Keystone per test process; ``xdist_group`` keeps
them on one worker so a run starts it once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient

from placement_api.app import create_app
from placement_api.db.engine import create_engine
from placement_api.settings import Settings
from tests.support import databases
from tests.support.client import PlacementClient
from tests.support.keystone import Keystone, User

# Test modules here set this as their ``pytestmark``.
ON_KEYSTONE_WORKER = pytest.mark.xdist_group("keystone")


@dataclass(frozen=True)
class Caller:
    """A token and the project it is scoped to (None: system or domain scope)."""

    token: str
    project_id: str | None


@dataclass(frozen=True)
class Cloud:
    keystone: Keystone
    service_user: User
    callers: dict[str, Caller]
    # A project no caller but the admin may read: someone else's usages.
    stranger_project_id: str


@pytest.fixture(scope="session")
def cloud(keystone: Keystone) -> Cloud:
    ks = keystone
    project = ks.create_project()
    other = ks.create_project()
    domain_admin = ks.user_with_roles("admin", project_id=project)
    ks.assign_role(domain_admin, "admin", domain_id=ks.domain_id)
    service = ks.service_user()
    member = ks.user_with_roles("member", project_id=project)
    reader = ks.user_with_roles("reader", project_id=project)
    other_reader = ks.user_with_roles("reader", project_id=other)
    system_reader = ks.user_with_roles("reader", system=True)
    callers = {
        "admin": Caller(ks.token(ks.admin, ks.admin_project_id), ks.admin_project_id),
        "service": Caller(ks.token(service, service.project_id), service.project_id),
        "project_member": Caller(ks.token(member, project), project),
        "project_reader": Caller(ks.token(reader, project), project),
        "other_project_reader": Caller(ks.token(other_reader, other), other),
        "system_admin": Caller(ks.admin_token(), None),
        "system_reader": Caller(ks.token(system_reader, system=True), None),
        "domain_admin": Caller(ks.token(domain_admin, domain_id=ks.domain_id), None),
    }
    return Cloud(ks, service, callers, stranger_project_id=ks.create_project())


def write_placement_conf(directory: Path, cloud: Cloud, **sections: dict[str, str]) -> Path:
    """A placement.conf with keystone auth; ``sections`` add or override options."""
    contents: dict[str, dict[str, str]] = {
        "api": {"auth_strategy": "keystone"},
        "keystone_authtoken": cloud.keystone.authtoken_options(cloud.service_user),
    }
    for name, options in sections.items():
        contents.setdefault(name, {}).update(options)
    path = directory / "placement.conf"
    path.write_text(
        "".join(
            f"[{name}]\n" + "".join(f"{key} = {value}\n" for key, value in options.items())
            for name, options in contents.items()
        )
    )
    return path


@asynccontextmanager
async def keystone_app(
    database_url: str, conf: Path, **settings: Any
) -> AsyncIterator[AsyncClient]:
    """The ASGI app with keystone auth from ``conf``, on a database emptied afterwards."""
    app = create_app(
        Settings(database_url=database_url, auth_strategy="keystone", config_file=conf, **settings)
    )
    try:
        async with app.router.lifespan_context(app):
            transport = ASGITransport(app=app)
            async with AsyncClient(transport=transport, base_url="http://placement") as http:
                yield http
    finally:
        engine = create_engine(database_url)
        try:
            await databases.clean(engine)
        finally:
            await engine.dispose()


def as_caller(http: AsyncClient, caller: Caller) -> PlacementClient:
    return PlacementClient(http, token=caller.token)
