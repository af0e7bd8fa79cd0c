"""Naming the database in one line when it cannot be reached, for the CLI."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from placement_api.db.engine import is_sqlite_url

# What a command that reads the database can fail with before it gets an
# answer: a refused or dropped connection, a missing file, a bad URL.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError, DBAPIError, ArgumentError)


class DatabaseUnavailable(Exception):
    """A one-line explanation that names the URL and what to check."""


def display_url(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL, relative paths resolved against the current directory."""
    if not is_sqlite_url(url) or ":///" not in url:
        return None
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database).resolve()


def require_existing(url: str) -> None:
    """Refuse to read a SQLite database that is not there (opening it would create it)."""
    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise DatabaseUnavailable(
            f"no SQLite database at {path} (PLACEMENT_DATABASE_URL={display_url(url)}, "
            f"relative to {os.getcwd()}): run `placement-api db upgrade` to create it, or "
            "set PLACEMENT_DATABASE_URL to the database the service uses"
        )


def unavailable(url: str, error: BaseException) -> DatabaseUnavailable:
    reason = str(getattr(error, "orig", None) or error).strip().splitlines()
    return DatabaseUnavailable(
        f"cannot use the database {display_url(url)}: "
        f"{type(error).__name__}: {reason[0] if reason else ''}. "
        "Check PLACEMENT_DATABASE_URL, that the server is running and reachable, "
        "and that the user may connect"
    )
