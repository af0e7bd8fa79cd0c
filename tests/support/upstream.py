"""Upstream OpenStack Placement for the tests: its venv (made once, reused),
a database of its own on MariaDB or PostgreSQL created by its migrations,
and its server (see ``bench/upstream.py``, which this calls into)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import upstream

BACKENDS = [
    b.strip()
    for b in os.environ.get("PLACEMENT_TEST_UPSTREAM_BACKENDS", "mariadb,postgresql").split(",")
]
SERVER_URLS = {
    "mariadb": os.environ.get("PLACEMENT_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306"),
    "postgresql": os.environ.get(
        "PLACEMENT_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test"
    )
    .rsplit("/", 1)[0]
    .replace("postgresql://", "postgresql+psycopg://", 1),
}


@contextmanager
def upstream_database(backend: str) -> Iterator[str]:
    """A new, empty database on the backend; yields its SQLAlchemy URL, drops it after."""
    with upstream.scratch_database(SERVER_URLS[backend], "placement_upstream") as url:
        yield url


def as_operators_write_it(url: str) -> str:
    """The URL as docs/interfaces name it: ``postgresql://`` or ``mysql+pymysql://``."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def venv_bin() -> Path:
    return upstream.ensure_upstream_venv()


def db_sync(database_url: str, config_dir: Path) -> None:
    upstream.db_sync(venv_bin(), database_url, config_dir)


@contextmanager
def upstream_server(config_dir: Path) -> Iterator[str]:
    """Upstream Placement serving the database ``db_sync`` configured in ``config_dir``."""
    with upstream.upstream_server(
        venv_bin(), config_dir, config_dir / "uwsgi.log", request_timeout=60, processes=2
    ) as url:
        yield url
