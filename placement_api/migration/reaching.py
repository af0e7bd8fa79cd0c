"""A database a move cannot reach, named in one line (its password masked)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from placement_api.migration.problems import MigrationError

# A refused or dropped connection, a missing file, a URL that names no driver.
UNREACHABLE = (OSError, DBAPIError, ArgumentError)


def masked(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<a URL that cannot be parsed>"


@contextmanager
def reaching(url: str, role: str) -> Iterator[None]:
    """Connection failures inside become a ``MigrationError`` naming ``role``'s URL."""
    try:
        yield
    except UNREACHABLE as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()
        raise MigrationError(
            f"cannot use the {role} database {masked(url)}: {type(error).__name__}: "
            f"{reason[0] if reason else ''}"
        ) from None
