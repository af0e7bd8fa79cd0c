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
Fixtures (import them into a ``conftest.py``:
``from tests.support.keystone import keystone  # noqa: F401``):

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

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "admin-secret"
REGION = "RegionOne"
DOMAIN_ID = "default"
SERVICE_PROJECT = "service"

# Keystone's oslo.config would parse gunicorn's command line as its own.
_WSGI_SHIM = (
    "import sys\n"
    "sys.argv = sys.argv[:1]\n"
    "from keystone.server import wsgi\n"
    "application = wsgi.initialize_public_application()\n"
)


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


def keystone_venv() -> Path:
    """The venv with keystone and gunicorn, installed if missing or outdated."""
    venv = Path(os.environ.get("KEYSTONE_VENV", ROOT / "var" / "keystone-venv"))
    env = dict(os.environ, KEYSTONE_VENV=str(venv))
    subprocess.run([str(ROOT / "scripts" / "install-keystone.sh")], check=True, env=env)
    return venv


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class _Server:
    """One gunicorn process serving Keystone from a config directory."""

    def __init__(self, bin_dir: Path, config_dir: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.config_dir = config_dir
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.config_dir / "gunicorn.log"

    def start(self) -> None:
        env = dict(
            os.environ,
            OS_KEYSTONE_CONFIG_DIR=str(self.config_dir),
            OS_KEYSTONE_CONFIG_FILES=str(self.config_dir / "keystone.conf"),
        )
        command = [
            str(self.bin_dir / "gunicorn"),
            "--pythonpath", str(self.config_dir),
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", "1", "--threads", "8",
            "--timeout", "120", "--graceful-timeout", "5",
            "keystone_wsgi:application",
        ]  # fmt: skip
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                command, env=env, stdout=output, stderr=subprocess.STDOUT
            )
        self._wait_until_up()

    def _wait_until_up(self, timeout: float = 90) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"keystone exited:\n{self.log.read_text()[-3000:]}")
            with suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.port}/v3", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"keystone did not answer within {timeout}s: {self.log}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def _write_config(config_dir: Path, data_dir: Path, token_expiration: int) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "keystone_wsgi.py").write_text(_WSGI_SHIM)
    # Every key repository points into the temp dir: the defaults are under /etc.
    (config_dir / "keystone.conf").write_text(
        f"[DEFAULT]\nlog_file = {config_dir / 'keystone.log'}\n"
        f"[database]\nconnection = sqlite:///{data_dir / 'keystone.db'}\n"
        f"[fernet_tokens]\nkey_repository = {data_dir / 'fernet-keys'}\n"
        f"[fernet_receipts]\nkey_repository = {data_dir / 'fernet-keys'}\n"
        f"[credential]\nkey_repository = {data_dir / 'credential-keys'}\n"
        f"[token]\nexpiration = {token_expiration}\n"
        # bcrypt's fewest rounds: users and password tokens are made in bulk.
        "[identity]\npassword_hash_rounds = 4\n"
    )


def _manage(bin_dir: Path, config_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    command = [
        str(bin_dir / "keystone-manage"),
        "--config-file",
        str(config_dir / "keystone.conf"),
        *args,
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_all(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        output, _ = process.communicate(timeout=180)
        if process.returncode != 0:
            raise RuntimeError(f"{process.args!r} failed:\n{output.decode()[-3000:]}")


# The URL bootstrap writes into a template's catalog; replaced when it runs.
_TEMPLATE_URL = "http://127.0.0.1:9/v3"
_DATA = ("keystone.db", "fernet-keys", "credential-keys")


def _template(bin_dir: Path) -> Path:
    """A bootstrapped data directory, made once per Keystone install and copied.

    keystone-manage's four steps take 10-30 s; a copy takes milliseconds.
    """
    venv = bin_dir.parent
    stamp = (venv / ".installed").read_text().strip()[:16]
    template = venv.parent / f"keystone-template-{stamp}"
    if (template / "keystone.db").exists():
        return template
    build = Path(tempfile.mkdtemp(prefix="keystone-template-", dir=venv.parent))
    _write_config(build / "main", build, 3600)
    _set_up(bin_dir, build / "main", _TEMPLATE_URL)
    shutil.rmtree(build / "main")
    try:
        build.rename(template)
    except OSError:
        # Another process made it first; theirs is as good.
        shutil.rmtree(build, ignore_errors=True)
    return template


def _set_up(bin_dir: Path, config_dir: Path, url: str) -> None:
    owner = ["--keystone-user", str(os.getuid()), "--keystone-group", str(os.getgid())]
    # The three are independent; run side by side they save a few seconds.
    _wait_all(
        [
            _manage(bin_dir, config_dir, "db_sync"),
            _manage(bin_dir, config_dir, "fernet_setup", *owner),
            _manage(bin_dir, config_dir, "credential_setup", *owner),
        ]
    )
    bootstrap = [
        "bootstrap",
        "--bootstrap-password", ADMIN_PASSWORD,
        "--bootstrap-username", "admin",
        "--bootstrap-project-name", "admin",
        "--bootstrap-role-name", "admin",
        "--bootstrap-service-name", "keystone",
        "--bootstrap-region-id", REGION,
        "--bootstrap-public-url", url,
        # keystonemiddleware looks Keystone up at the internal interface.
        "--bootstrap-internal-url", url,
    ]  # fmt: skip
    _wait_all([_manage(bin_dir, config_dir, *bootstrap)])


class Keystone:
    """A running Keystone and helpers to fill it (see the module docstring)."""

    def __init__(self, server: _Server, data_dir: Path) -> None:
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
        _write_config(config_dir, self._data_dir, seconds)
        server = _Server(self._server.bin_dir, config_dir, _free_port())
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
    port = _free_port()
    server = _Server(bin_dir, config_dir, port)
    try:
        template = _template(bin_dir)
        for name in _DATA:
            copy = shutil.copytree if (template / name).is_dir() else shutil.copy2
            copy(template / name, data_dir / name)
        _write_config(config_dir, data_dir, token_expiration)
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
