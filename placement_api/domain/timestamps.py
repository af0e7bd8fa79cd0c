"""The times rows carry: when a write happened, and the latest of several."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def newest(*moments: datetime | None) -> datetime | None:
    """The latest of the moments given (naive ones are UTC, as SQLite returns them)."""
    present = [m if m.tzinfo else m.replace(tzinfo=UTC) for m in moments if m is not None]
    return max(present) if present else None
