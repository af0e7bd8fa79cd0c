"""Upstream OpenStack Placement, run for comparison: the ``openstack-placement``
package from PyPI in a venv of its own, its database made by its own
migrations (``placement-manage db sync``) on PostgreSQL or MariaDB, served
by uWSGI. The benchmarks and the tests share this module; it imports
nothing from either.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VENV = ROOT / "var" / "upstream-venv"
HEADERS = {"x-auth-token": "admin", "accept": "application/json"}
UPSTREAM_PACKAGES = ["openstack-placement==16.0.0", "psycopg2-binary", "PyMySQL", "uwsgi"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_up(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited; log {log}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base_url}/", headers=HEADERS, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"server did not answer within 180 s; log {log}")


@contextmanager
def running(
    command: list[str], env: dict[str, str], log: Path, cwd: Path | None = None
) -> Iterator[str]:
    """Start a server process; yield its base URL; stop it (SIGTERM, then SIGKILL)."""
    port = free_port()
    command = [part.replace("{port}", str(port)) for part in command]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base_url, process, log)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def ensure_upstream_venv(venv: Path = DEFAULT_VENV) -> Path:
    """A venv with UPSTREAM_PACKAGES from PyPI, made once and reused; returns its bin dir.
    A lock beside it lets parallel test workers wait for one install."""
    bin_dir = venv / "bin"
    marker = venv / ".upstream-installed"
    wanted = " ".join(UPSTREAM_PACKAGES) + "\n"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or marker.read_text() != wanted:
            if not (bin_dir / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(bin_dir / "pip"), "install", "-q", *UPSTREAM_PACKAGES], check=True)
            marker.write_text(wanted)
    return bin_dir


ADMIN_DATABASES = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgres"}


def _admin(server_url: str, statement: str) -> None:
    backend = server_url.split(":", 1)[0].split("+", 1)[0]
    engine = create_engine(
        f"{server_url}/{ADMIN_DATABASES[backend]}", poolclass=NullPool, isolation_level="AUTOCOMMIT"
    )
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


@contextmanager
def scratch_database(server_url: str, prefix: str) -> Iterator[str]:
    """A new, empty database on a MariaDB or PostgreSQL server (``server_url`` is a
    SQLAlchemy URL without a database); yields its URL, drops it after."""
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    _admin(server_url, f"CREATE DATABASE {name}")
    try:
        yield f"{server_url}/{name}"
    finally:
        force = " WITH (FORCE)" if server_url.startswith("postgresql") else ""
        _admin(server_url, f"DROP DATABASE IF EXISTS {name}{force}")


def upstream_version(bin_dir: Path) -> str:
    result = subprocess.run(
        [str(bin_dir / "pip"), "show", "openstack-placement"],
        capture_output=True,
        text=True,
        check=True,
    )
    return next(
        line.split(":", 1)[1].strip()
        for line in result.stdout.splitlines()
        if line.startswith("Version:")
    )


def upstream_connection_url(url: str) -> str:
    """The URL upstream's oslo.db takes for a database: its drivers are psycopg2 and PyMySQL."""
    scheme, rest = url.split("://", 1)
    driver = "postgresql+psycopg2" if scheme.startswith("postgresql") else "mysql+pymysql"
    return f"{driver}://{rest}"


def db_sync(bin_dir: Path, database_url: str, config_dir: Path) -> None:
    """Write placement.conf for the database; create upstream's schema with its migrations."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "placement.conf").write_text(
        "[DEFAULT]\ndebug = false\n[api]\nauth_strategy = noauth2\n"
        f"[placement_database]\nconnection = {upstream_connection_url(database_url)}\n"
    )
    subprocess.run(
        [str(bin_dir / "placement-manage"), "--config-dir", str(config_dir), "db", "sync"],
        check=True,
        capture_output=True,
    )


@contextmanager
def upstream_server(
    bin_dir: Path, config_dir: Path, log: Path, *, request_timeout: int, processes: int = 1
) -> Iterator[str]:
    """uWSGI serving placement.wsgi.api (one process by default, so requests are
    measured one at a time); a request running past ``request_timeout`` s is killed."""
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(config_dir))
    command = [
        str(bin_dir / "uwsgi"),
        "--http-socket", "127.0.0.1:{port}",
        "--module", "placement.wsgi.api:application",
        "--master", "--processes", str(processes), "--threads", "1",
        "--die-on-term", "--disable-logging",
        "--harakiri", str(request_timeout),
    ]  # fmt: skip
    with running(command, env, log) as base_url:
        # Placement syncs its standard traits and classes on first use.
        httpx.get(
            f"{base_url}/traits", headers={**HEADERS, "openstack-api-version": "placement 1.6"}
        )
        yield base_url
