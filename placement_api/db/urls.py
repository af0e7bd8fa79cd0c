"""The database URLs operators already have, turned into the async driver's.

``postgresql://``, ``postgres://`` and ``postgresql+<driver>://`` mean PostgreSQL
through asyncpg; ``sqlite://`` means SQLite through aiosqlite. Only the scheme
changes, and libpq's ``sslmode`` becomes asyncpg's ``ssl`` (same values): the
hosts, ports and ``target_session_attrs`` of a multi-host URL are left as they
are. An option asyncpg would not take is named here rather than as a driver's
``TypeError`` on the first connection. MySQL and MariaDB are import sources
only (``placement-api db import --source``).
"""

from __future__ import annotations

import inspect

import asyncpg
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

ASYNC_POSTGRESQL = "postgresql+asyncpg"
ASYNC_SQLITE = "sqlite+aiosqlite"
_IMPORT_ONLY = ("mysql", "mariadb")
# What SQLAlchemy's asyncpg dialect takes from the query besides asyncpg.connect's own.
_DIALECT_OPTIONS = frozenset(
    {"prepared_statement_cache_size", "prepared_statement_name_func", "async_fallback"}
)
_ASYNCPG_OPTIONS = frozenset(inspect.signature(asyncpg.connect).parameters)
# libpq's names for what asyncpg calls otherwise, or what a setting of ours gives.
_RENAMED = {"sslmode": "ssl"}
_BY_SETTING = {
    "connect_timeout": "PLACEMENT_DATABASE_CONNECT_TIMEOUT",
    "statement_timeout": "PLACEMENT_DATABASE_STATEMENT_TIMEOUT",
    "lock_timeout": "PLACEMENT_DATABASE_LOCK_TIMEOUT",
}


class UnsupportedDatabaseURL(ArgumentError):
    """A URL the service cannot run on, with one line saying what to use instead."""


def async_url(url: str | URL) -> URL:
    """``url`` with the scheme (and libpq option names) the async engine needs."""
    parsed = _parse(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername=ASYNC_SQLITE)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername=ASYNC_POSTGRESQL, query=_asyncpg_query(parsed))
    if backend in _IMPORT_ONLY:
        raise UnsupportedDatabaseURL(
            f"{parsed.drivername}: MySQL and MariaDB are supported only as an import source "
            "(`placement-api db import --source URL`); the service runs on PostgreSQL "
            "(postgresql://...) or SQLite (sqlite:///...)"
        )
    raise UnsupportedDatabaseURL(
        f"{parsed.drivername}: not a database the service runs on; use PostgreSQL "
        "(postgresql://...) or SQLite (sqlite:///...)"
    )


def _parse(url: str | URL) -> URL:
    if isinstance(url, URL):
        return url
    # SQLAlchemy knows no "postgres" dialect, though libpq and most platforms say it.
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    try:
        return make_url(url)
    except ArgumentError as error:
        raise UnsupportedDatabaseURL(f"not a database URL: {error}") from None


def _asyncpg_query(url: URL) -> dict[str, str | tuple[str, ...]]:
    query: dict[str, str | tuple[str, ...]] = {}
    for name, value in url.query.items():
        if name in _BY_SETTING:
            raise UnsupportedDatabaseURL(
                f"the URL's {name} option: set {_BY_SETTING[name]} instead (in seconds)"
            )
        renamed = _RENAMED.get(name, name)
        if renamed not in _ASYNCPG_OPTIONS | _DIALECT_OPTIONS:
            raise UnsupportedDatabaseURL(
                f"the URL's {name} option is not one asyncpg takes "
                "(see asyncpg.connect: e.g. ssl, target_session_attrs, host)"
            )
        if renamed in url.query and renamed != name:
            continue  # both spellings given: asyncpg's wins
        query[renamed] = value
    return query
