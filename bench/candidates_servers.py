"""The two servers the candidates benchmark compares, each on its own
PostgreSQL database: ours (uvicorn, ``python -m placement_api serve``) and
upstream OpenStack Placement (the ``openstack-placement`` package from PyPI,
installed into a venv of its own, served by uWSGI).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parents[1]
HEADERS = {"x-auth-token": "admin", "accept": "application/json"}
UPSTREAM_PACKAGES = ["openstack-placement", "psycopg2-binary", "uwsgi"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_dsn(admin_dsn: str, database: str) -> str:
    return f"{admin_dsn.rsplit('/', 1)[0]}/{database}"


async def recreate_database(admin_dsn: str, database: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await connection.execute(f'CREATE DATABASE "{database}"')
    finally:
        await connection.close()


async def drop_database(admin_dsn: str, database: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await connection.close()


def wait_until_up(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited; log {log}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base_url}/", headers=HEADERS, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"server did not answer within 90 s; log {log}")


@contextmanager
def running(command: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """Start a server process; yield its base URL; stop it (SIGTERM, then SIGKILL)."""
    port = free_port()
    command = [part.replace("{port}", str(port)) for part in command]
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
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


# -- ours ------------------------------------------------------------------


def prepare_ours(admin_dsn: str, database: str) -> str:
    """Create and migrate the database; return its SQLAlchemy URL."""
    from placement_api.db import migrations
    from placement_api.db.engine import create_engine
    from placement_api.db.session import make_session_factory, unit_of_work
    from placement_api.domain.standard_names import sync_standard_names

    asyncio.run(recreate_database(admin_dsn, database))
    url = server_dsn(admin_dsn, database).replace("postgresql://", "postgresql+asyncpg://", 1)
    migrations.upgrade(url)

    async def sync() -> None:
        engine = create_engine(url)
        async with unit_of_work(make_session_factory(engine), write=True) as session:
            await sync_standard_names(session)
        await engine.dispose()

    asyncio.run(sync())
    return url


@contextmanager
def ours_server(url: str, log: Path) -> Iterator[str]:
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url, PLACEMENT_AUTH_STRATEGY="noauth2")
    command = [sys.executable, "-m", "placement_api", "serve", "--port", "{port}"]
    with running([*command, "--log-level", "warning"], env, log) as base_url:
        yield base_url


# -- upstream --------------------------------------------------------------


def ensure_upstream_venv(venv: Path) -> Path:
    """A venv with openstack-placement, psycopg2 and uWSGI from PyPI; returns its bin dir."""
    bin_dir = venv / "bin"
    marker = venv / ".bench-installed"
    if not marker.exists():
        if not (bin_dir / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(bin_dir / "pip"), "install", "-q", *UPSTREAM_PACKAGES], check=True)
        marker.write_text(" ".join(UPSTREAM_PACKAGES) + "\n")
    return bin_dir


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


def prepare_upstream(bin_dir: Path, admin_dsn: str, database: str, config_dir: Path) -> None:
    """Create the database, write placement.conf, run ``placement-manage db sync``."""
    asyncio.run(recreate_database(admin_dsn, database))
    config_dir.mkdir(parents=True, exist_ok=True)
    connection = server_dsn(admin_dsn, database).replace("postgresql://", "postgresql+psycopg2://")
    (config_dir / "placement.conf").write_text(
        "[DEFAULT]\ndebug = false\n[api]\nauth_strategy = noauth2\n"
        f"[placement_database]\nconnection = {connection}\n"
    )
    subprocess.run(
        [str(bin_dir / "placement-manage"), "--config-dir", str(config_dir), "db", "sync"],
        check=True,
        capture_output=True,
    )


@contextmanager
def upstream_server(
    bin_dir: Path, config_dir: Path, log: Path, *, request_timeout: int
) -> Iterator[str]:
    """uWSGI serving placement.wsgi.api, one process (requests are measured one at a
    time); a request running past ``request_timeout`` seconds is killed."""
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(config_dir))
    command = [
        str(bin_dir / "uwsgi"),
        "--http-socket", "127.0.0.1:{port}",
        "--module", "placement.wsgi.api:application",
        "--master", "--processes", "1", "--threads", "1",
        "--die-on-term", "--disable-logging",
        "--harakiri", str(request_timeout),
    ]  # fmt: skip
    with running(command, env, log) as base_url:
        # Placement syncs its standard traits and classes on first use.
        httpx.get(
            f"{base_url}/traits", headers={**HEADERS, "openstack-api-version": "placement 1.6"}
        )
        yield base_url
