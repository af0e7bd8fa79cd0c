"""The two servers the candidates benchmark compares, each on its own
PostgreSQL database: ours (uvicorn, ``python -m placement_api serve``) and
upstream OpenStack Placement (see ``upstream.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
from upstream import (
    DEFAULT_VENV,
    HEADERS,
    ROOT,
    db_sync,
    ensure_upstream_venv,
    running,
    upstream_server,
    upstream_version,
)

__all__ = [
    "ADMIN_PG_URL",
    "DEFAULT_VENV",
    "HEADERS",
    "ROOT",
    "add_pg_url_option",
    "database_bytes",
    "drop_database",
    "ensure_upstream_venv",
    "largest_rss_bytes",
    "ours_server",
    "prepare_ours",
    "prepare_upstream",
    "provider_count",
    "server_dsn",
    "server_pids",
    "upstream_server",
    "upstream_version",
]

# The PostgreSQL server the benchmarks create their databases on.
ADMIN_PG_URL = os.environ.get(
    "PLACEMENT_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def add_pg_url_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pg-url",
        default=ADMIN_PG_URL,
        help="PostgreSQL server for the benchmark's databases (PLACEMENT_BENCH_PG_URL)",
    )


def server_dsn(admin_dsn: str, database: str) -> str:
    return f"{admin_dsn.rsplit('/', 1)[0]}/{database}"


async def recreate_database(admin_dsn: str, database: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await connection.execute(f'CREATE DATABASE "{database}"')
    finally:
        await connection.close()


async def provider_count(admin_dsn: str, database: str) -> int | None:
    """Providers in ``database``; None when it does not exist or has no schema."""
    connection = await asyncpg.connect(admin_dsn)
    try:
        exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database)
    finally:
        await connection.close()
    if not exists:
        return None
    connection = await asyncpg.connect(server_dsn(admin_dsn, database))
    try:
        count: int = await connection.fetchval("SELECT count(*) FROM resource_providers")
        return count
    except asyncpg.UndefinedTableError:
        return None
    finally:
        await connection.close()


async def database_bytes(admin_dsn: str, database: str) -> int:
    connection = await asyncpg.connect(admin_dsn)
    try:
        size: int = await connection.fetchval("SELECT pg_database_size($1)", database)
        return size
    finally:
        await connection.close()


def server_pids(url: str) -> set[int]:
    """The server's processes: the child of this process listening on its
    port, and its descendants (the workers)."""
    port = url.rsplit(":", 1)[1].encode()
    parents: dict[int, int] = {}
    server = None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parents[int(entry.name)] = parent
        if parent == os.getpid() and any(port in part for part in command):
            server = int(entry.name)
    if server is None:
        raise RuntimeError(f"no server process of ours for {url}")
    tree = {server}
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    return tree


def largest_rss_bytes(pids: set[int]) -> int:
    """The resident memory of the largest of ``pids`` (a server's worker)."""
    largest = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                largest = max(largest, int(line.split()[1]) * 1024)
    return largest


async def drop_database(admin_dsn: str, database: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await connection.close()


# -- ours ------------------------------------------------------------------


def prepare_ours(
    admin_dsn: str, database: str, tree: Path | None = None, *, keep: bool = False
) -> str:
    """Create and migrate the database; return its SQLAlchemy URL. With
    ``tree`` (a checkout of another commit), migrated by that commit's code,
    to that commit's schema. ``keep``: migrate the database as it is (one
    kept from an earlier run) instead of making it afresh."""
    if not keep:
        asyncio.run(recreate_database(admin_dsn, database))
    url = server_dsn(admin_dsn, database).replace("postgresql://", "postgresql+asyncpg://", 1)
    if tree is None:
        _migrate(url)
    else:
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run([sys.executable, __file__, url], env=env, cwd=tree, check=True)
    return url


def _migrate(url: str) -> None:
    """The schema and the standard names, by the ``placement_api`` first on the path."""
    from placement_api.db import migrations
    from placement_api.db.engine import create_engine
    from placement_api.db.session import make_session_factory, unit_of_work
    from placement_api.domain.standard_names import sync_standard_names

    migrations.upgrade(url)

    async def sync() -> None:
        engine = create_engine(url)
        async with unit_of_work(make_session_factory(engine), write=True) as session:
            await sync_standard_names(session)
        await engine.dispose()

    asyncio.run(sync())


# How the benchmarks serve ours: no access log line (upstream's logging is off too).
QUIET = "warning"


@contextmanager
def ours_server(
    url: str,
    log: Path,
    workers: int = 1,
    tree: Path | None = None,
    log_level: str | None = QUIET,
) -> Iterator[str]:
    """``tree``: serve the code of this checkout instead (another commit, to compare):
    run from it (``python -m`` looks in the working directory first) and with it
    first on the path (the workers too). ``log_level`` None: as shipped (``info``,
    an access log line per request, into ``log``)."""
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url, PLACEMENT_AUTH_STRATEGY="noauth2")
    # Upstream caps no candidates by default: the "no limit" queries compare whole answers.
    env.setdefault("PLACEMENT_MAX_ALLOCATION_CANDIDATES", "-1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-m", "placement_api", "serve", "--port", "{port}"]
    command += ["--workers", str(workers)]
    if log_level is not None:
        command += ["--log-level", log_level]
    with running(command, env, log, cwd=tree) as base_url:
        yield base_url


# -- upstream --------------------------------------------------------------


def prepare_upstream(
    bin_dir: Path, admin_dsn: str, database: str, config_dir: Path, *, keep: bool = False
) -> None:
    """Create the database (``keep``: keep it as it is), write placement.conf,
    run ``placement-manage db sync``."""
    if not keep:
        asyncio.run(recreate_database(admin_dsn, database))
    db_sync(bin_dir, server_dsn(admin_dsn, database), config_dir)


if __name__ == "__main__":
    # prepare_ours(tree=...): run with that commit's code first on the path.
    _migrate(sys.argv[1])
