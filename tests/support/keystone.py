"""A real OpenStack Keystone for tests and benchmarks.

Keystone (the ``keystone`` package from PyPI) lives in a virtualenv of its
own, ``var/keystone-venv`` (``KEYSTONE_VENV`` overrides it), made by
``scripts/install-keystone.sh`` (``make test`` runs it; this module runs it
too when the venv is missing). Each instance runs on SQLite in a temporary
directory: a copy of a template that ``keystone-manage db_sync``,
``fernet_setup``, ``credential_setup`` and ``bootstrap`` made once per
install (beside the venv), then its WSGI app under gunicorn on a
free 127.0.0.1 port, registered in the catalog as the identity service's
public and internal endpoint in ``RegionOne``. A few seconds to start
(15-30 s the first time, for the template).

Interface
---------
Fixtures (``tests/conftest.py`` imports them, so every test may ask for
them; a second import in another conftest would start a second Keystone):

* ``keystone`` -- session scoped, yields a :class:`Keystone` whose tokens
  last an hour.

Context manager, for anything else (benchmarks, other expiries):

* ``running_keystone(token_expiration=3600) -> Iterator[Keystone]``.

:class:`Keystone`:

* ``url`` -- public endpoint, ``http://127.0.0.1:<port>/v3``;
  ``region`` -- ``RegionOne``; ``admin`` -- a :class:`User` (``admin`` /
  ``ADMIN_PASSWORD``, ``admin`` role on the ``admin`` project and on the
  system), ``admin_project_id``; ``domain_id`` -- ``default``.
* ``token(user, project_id=None, system=False, domain_id=None) -> str`` -- a
  password token, project scoped when ``project_id`` is given, system scoped
  when ``system``, domain scoped when ``domain_id``, unscoped otherwise.
  ``admin_token()`` -- the admin's system-scoped token.
  ``application_credential_token(credential) -> str``.
* ``create_project(name=None) -> str`` (id); ``create_user(name=None,
  password=None) -> User``; ``assign_role(user, role, project_id=None,
  system=False, domain_id=None)``; ``role_id(name)``. Bootstrap made the roles ``admin``,
  ``manager``, ``member``, ``reader`` and ``service``.
* ``user_with_roles(*roles, project_id=None, system=False) -> User`` -- a
  new user holding ``roles`` on the project (a new one when not given) or
  on the system; ``user.project_id`` says which project.
* ``create_application_credential(user, project_id, roles=None,
  expires_at=None) -> ApplicationCredential`` (``id``, ``secret``).
* ``register_service(service_type="placement", url=..., interfaces=("public",))``
  -- a catalog service with one endpoint per interface in ``region``; returns
  the service id.
* ``service_user() -> User`` -- a user with the ``service``
  role on the ``service`` project (made once), as a service's
  ``[keystone_authtoken]`` credentials would be; see also
  ``authtoken_options(user)`` for that section as a dict.
* ``with_token_expiration(seconds) -> Iterator[Keystone]`` -- a second
  Keystone process over the same database and keys whose tokens expire after
  ``seconds``; tokens from either validate at both (a few seconds to start).
* ``stopped() -> Iterator[None]`` -- Keystone is down inside the block
  (connections refused) and up again, same port and data, after it.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.keystone_server import (
    ADMIN_PASSWORD,
    REGION,
    Server,
    copy_template,
    keystone_venv,
    write_config,
)
from tests.support.server import free_port

DOMAIN_ID = "default"
SERVICE_PROJECT = "service"


@dataclass(frozen=True)
class User:
    id: str
    name: str
    password: str
    project_id: str | None = None


# Logs in by name, before the admin's id is known.
_ADMIN_LOGIN = User(id="", name="admin", password=ADMIN_PASSWORD)


@dataclass(frozen=True)
class ApplicationCredential:
    id: str
    secret: str
    user_id: str


class Keystone:
    """A running Keystone and helpers to fill it (see the module docstring)."""

    def __init__(self, server: Server, data_dir: Path) -> None:
        self._server = server
        self._data_dir = data_dir
        self.url = f"http://127.0.0.1:{server.port}/v3"
        self.region = REGION
        self.domain_id = DOMAIN_ID
        self._http = httpx.Client(timeout=30)
        self._admin_token: str | None = None
        self._service_project_id: str | None = None
        self.admin = User(
            id=self._find("users", "admin"),
            name="admin",
            password=ADMIN_PASSWORD,
            project_id=self._find("projects", "admin"),
        )
        self.admin_project_id: str = self.admin.project_id or ""

    # -- tokens ---------------------------------------------------------------

    def token(
        self,
        user: User,
        project_id: str | None = None,
        *,
        system: bool = False,
        domain_id: str | None = None,
    ) -> str:
        auth: dict[str, Any] = {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {"id": user.id, "password": user.password}
                    if user.id
                    else {"name": user.name, "domain": {"id": DOMAIN_ID}, "password": user.password}
                },
            }
        }
        if system:
            auth["scope"] = {"system": {"all": True}}
        elif domain_id is not None:
            auth["scope"] = {"domain": {"id": domain_id}}
        elif project_id is not None:
            auth["scope"] = {"project": {"id": project_id}}
        response = self._http.post(f"{self.url}/auth/tokens", json={"auth": auth})
        _check(response)
        return response.headers["x-subject-token"]

    def application_credential_token(self, credential: ApplicationCredential) -> str:
        identity = {
            "methods": ["application_credential"],
            "application_credential": {"id": credential.id, "secret": credential.secret},
        }
        response = self._http.post(f"{self.url}/auth/tokens", json={"auth": {"identity": identity}})
        _check(response)
        return response.headers["x-subject-token"]

    def admin_token(self) -> str:
        """The admin's system-scoped token (cached; it lasts the session)."""
        if self._admin_token is None:
            self._admin_token = self.token(_ADMIN_LOGIN, system=True)
        return self._admin_token

    # -- identity -------------------------------------------------------------

    def create_project(self, name: str | None = None) -> str:
        body = {"project": {"name": name or f"project-{uuid.uuid4().hex[:12]}"}}
        body["project"]["domain_id"] = DOMAIN_ID
        created: str = self._post("projects", body)["project"]["id"]
        return created

    def create_user(self, name: str | None = None, password: str | None = None) -> User:
        name = name or f"user-{uuid.uuid4().hex[:12]}"
        password = password or uuid.uuid4().hex
        body = {"user": {"name": name, "password": password, "domain_id": DOMAIN_ID}}
        user_id: str = self._post("users", body)["user"]["id"]
        return User(id=user_id, name=name, password=password)

    def role_id(self, name: str) -> str:
        return self._find("roles", name)

    def assign_role(
        self,
        user: User,
        role: str,
        project_id: str | None = None,
        *,
        system: bool = False,
        domain_id: str | None = None,
    ) -> None:
        role_id = self.role_id(role)
        if system:
            path = f"system/users/{user.id}/roles/{role_id}"
        elif domain_id is not None:
            path = f"domains/{domain_id}/users/{user.id}/roles/{role_id}"
        elif project_id is not None:
            path = f"projects/{project_id}/users/{user.id}/roles/{role_id}"
        else:
            raise ValueError("assign_role needs a project_id, a domain_id or system=True")
        _check(self._http.put(f"{self.url}/{path}", headers=self._admin_headers()))

    def user_with_roles(
        self, *roles: str, project_id: str | None = None, system: bool = False
    ) -> User:
        user = self.create_user()
        if not system and project_id is None:
            project_id = self.create_project()
        for role in roles:
            self.assign_role(user, role, project_id, system=system)
        return User(id=user.id, name=user.name, password=user.password, project_id=project_id)

    def create_application_credential(
        self,
        user: User,
        project_id: str,
        *,
        roles: Sequence[str] | None = None,
        expires_at: str | None = None,
    ) -> ApplicationCredential:
        """An application credential of ``user`` on ``project_id`` (made with its own token)."""
        credential: dict[str, Any] = {"name": f"appcred-{uuid.uuid4().hex[:12]}"}
        if roles is not None:
            credential["roles"] = [{"name": role} for role in roles]
        if expires_at is not None:
            credential["expires_at"] = expires_at
        response = self._http.post(
            f"{self.url}/users/{user.id}/application_credentials",
            json={"application_credential": credential},
            headers={"x-auth-token": self.token(user, project_id)},
        )
        _check(response)
        made = response.json()["application_credential"]
        return ApplicationCredential(id=made["id"], secret=made["secret"], user_id=user.id)

    # -- catalog --------------------------------------------------------------

    def register_service(
        self,
        service_type: str = "placement",
        *,
        url: str,
        name: str | None = None,
        interfaces: Sequence[str] = ("public",),
    ) -> str:
        """A catalog entry: the service and one endpoint per interface at ``url``."""
        service = {"type": service_type, "name": name or service_type, "enabled": True}
        service_id: str = self._post("services", {"service": service})["service"]["id"]
        for interface in interfaces:
            endpoint = {
                "service_id": service_id,
                "interface": interface,
                "url": url,
                "region_id": self.region,
            }
            self._post("endpoints", {"endpoint": endpoint})
        return service_id

    def service_user(self) -> User:
        """A new user with the ``service`` role on the ``service`` project."""
        if self._service_project_id is None:
            self._service_project_id = self.create_project(SERVICE_PROJECT)
        return self.user_with_roles("service", project_id=self._service_project_id)

    def authtoken_options(self, user: User) -> dict[str, str]:
        """A ``[keystone_authtoken]`` section authenticating as ``user``."""
        return {
            "www_authenticate_uri": self.url,
            "auth_url": self.url,
            "auth_type": "password",
            "username": user.name,
            "password": user.password,
            "user_domain_id": DOMAIN_ID,
            "project_id": user.project_id or "",
            "region_name": self.region,
        }

    def point_identity_endpoints_here(self) -> None:
        """The catalog's identity endpoints at this server (a template's are not)."""
        identity = self._find_by("services", type="identity")
        listed = self._http.get(
            f"{self.url}/endpoints",
            params={"service_id": identity},
            headers=self._admin_headers(),
        )
        _check(listed)
        for endpoint in listed.json()["endpoints"]:
            _check(
                self._http.patch(
                    f"{self.url}/endpoints/{endpoint['id']}",
                    json={"endpoint": {"url": self.url}},
                    headers=self._admin_headers(),
                )
            )

    # -- lifecycle ------------------------------------------------------------

    @contextmanager
    def with_token_expiration(self, seconds: int) -> Iterator[Keystone]:
        """Another Keystone process on the same data whose tokens last ``seconds``."""
        config_dir = Path(tempfile.mkdtemp(prefix="keystone-issuer-", dir=self._data_dir))
        write_config(config_dir, self._data_dir, seconds)
        server = Server(self._server.bin_dir, config_dir, free_port())
        server.start()
        issuer = Keystone(server, self._data_dir)
        try:
            yield issuer
        finally:
            issuer.close()
            server.stop()

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """Keystone is down (connections refused) inside the block, up after it."""
        self._server.stop()
        try:
            yield
        finally:
            self._server.start()

    def close(self) -> None:
        self._http.close()

    # -- plumbing -------------------------------------------------------------

    def _admin_headers(self) -> dict[str, str]:
        return {"x-auth-token": self.admin_token()}

    def _post(self, collection: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._http.post(
            f"{self.url}/{collection}", json=body, headers=self._admin_headers()
        )
        _check(response)
        found: dict[str, Any] = response.json()
        return found

    def _find(self, collection: str, name: str) -> str:
        return self._find_by(collection, name=name)

    def _find_by(self, collection: str, **filters: str) -> str:
        response = self._http.get(
            f"{self.url}/{collection}", params=filters, headers=self._admin_headers()
        )
        _check(response)
        items = response.json()[collection]
        if not items:
            raise LookupError(f"no {collection} with {filters}")
        found: str = items[0]["id"]
        return found


def _check(response: httpx.Response) -> None:
    if response.is_error:
        raise RuntimeError(
            f"keystone {response.request.method} {response.request.url} -> "
            f"{response.status_code}: {response.text[:500]}"
        )


@contextmanager
def running_keystone(*, token_expiration: int = 3600) -> Iterator[Keystone]:
    """A fresh Keystone on SQLite in a temp dir; removed afterwards."""
    bin_dir = keystone_venv() / "bin"
    data_dir = Path(tempfile.mkdtemp(prefix="keystone-"))
    config_dir = data_dir / "main"
    port = free_port()
    server = Server(bin_dir, config_dir, port)
    try:
        copy_template(bin_dir, data_dir)
        write_config(config_dir, data_dir, token_expiration)
        server.start()
        keystone = Keystone(server, data_dir)
        keystone.point_identity_endpoints_here()
        try:
            yield keystone
        finally:
            keystone.close()
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def keystone() -> Iterator[Keystone]:
    """A real Keystone for the whole test session (tokens last an hour)."""
    with running_keystone() as running:
        yield running
