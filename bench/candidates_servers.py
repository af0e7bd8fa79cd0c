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
    "drop_database",
    "ensure_upstream_venv",
    "ours_server",
    "prepare_ours",
    "prepare_upstream",
    "server_dsn",
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


async def drop_database(admin_dsn: str, database: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await connection.close()


# -- ours ------------------------------------------------------------------


def prepare_ours(admin_dsn: str, database: str, tree: Path | None = None) -> str:
    """Create and migrate the database; return its SQLAlchemy URL. With
    ``tree`` (a checkout of another commit), migrated by that commit's code,
    to that commit's schema."""
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


@contextmanager
def ours_server(url: str, log: Path, workers: int = 1, tree: Path | None = None) -> Iterator[str]:
    """``tree``: serve the code of this checkout instead (another commit, to compare):
    run from it (``python -m`` looks in the working directory first) and with it
    first on the path (the workers too)."""
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url, PLACEMENT_AUTH_STRATEGY="noauth2")
    # Upstream caps no candidates by default: the "no limit" queries compare whole answers.
    env.setdefault("PLACEMENT_MAX_ALLOCATION_CANDIDATES", "-1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-m", "placement_api", "serve", "--port", "{port}"]
    command += ["--workers", str(workers)]
    with running([*command, "--log-level", "warning"], env, log, cwd=tree) as base_url:
        yield base_url


# -- upstream --------------------------------------------------------------


def prepare_upstream(bin_dir: Path, admin_dsn: str, database: str, config_dir: Path) -> None:
    """Create the database, write placement.conf, run ``placement-manage db sync``."""
    asyncio.run(recreate_database(admin_dsn, database))
    db_sync(bin_dir, server_dsn(admin_dsn, database), config_dir)


if __name__ == "__main__":
    # prepare_ours(tree=...): run with that commit's code first on the path.
    _migrate(sys.argv[1])
