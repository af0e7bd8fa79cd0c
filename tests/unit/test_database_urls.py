"""The database URLs operators already have: the scheme the async engine needs,
their options kept, and one clear line for what the service cannot run on."""

from __future__ import annotations

import pytest

from placement_api.db.direct_connect import connect_arguments
from placement_api.db.urls import UnsupportedDatabaseURL, async_url


@pytest.mark.parametrize(
    "given",
    [
        "postgresql://user:pw@db:5432/placement",
        "postgres://user:pw@db:5432/placement",
        "postgresql+psycopg2://user:pw@db:5432/placement",
        "postgresql+asyncpg://user:pw@db:5432/placement",
    ],
)
def test_every_postgresql_spelling_means_asyncpg(given: str) -> None:
    url = async_url(given)
    assert url.drivername == "postgresql+asyncpg"
    assert (url.host, url.port, url.database, url.password) == ("db", 5432, "placement", "pw")


def test_sqlite_without_a_driver_means_aiosqlite() -> None:
    assert async_url("sqlite:///var/p.sqlite").drivername == "sqlite+aiosqlite"


def test_multi_host_options_are_left_as_they_are() -> None:
    given = "postgresql://u@/placement?host=a:5432&host=b:5432&target_session_attrs=read-write"
    url = async_url(given)
    assert url.query["host"] == ("a:5432", "b:5432")
    assert url.query["target_session_attrs"] == "read-write"


def test_libpq_sslmode_becomes_asyncpgs_ssl_for_every_connection() -> None:
    url = async_url("postgres://u@db/placement?sslmode=require")
    assert dict(url.query) == {"ssl": "require"}
    assert connect_arguments(url, timeout=1)["ssl"] == "require"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("mysql+pymysql://root:pw@db/placement", "import source"),
        ("mariadb+pymysql://root:pw@db/placement", "import source"),
        ("oracle://scott@db/placement", "PostgreSQL"),
        ("postgresql://u@db/p?connect_timeout=3", "PLACEMENT_DATABASE_CONNECT_TIMEOUT"),
        ("postgresql://u@db/p?fallback_application_name=x", "fallback_application_name"),
    ],
)
def test_what_the_service_cannot_run_on_is_one_clear_sentence(given: str, named: str) -> None:
    with pytest.raises(UnsupportedDatabaseURL) as raised:
        async_url(given)
    assert named in str(raised.value)
    assert "\n" not in str(raised.value)
