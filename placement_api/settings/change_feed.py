"""The change feed (GET /changes): what it keeps, and what its readers may hold."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ChangeFeedSettings(BaseModel):
    """Retention, waits, notifications, cache and readers of the change feed."""

    changes_retained: int = Field(
        default=100_000,
        ge=1,
        description="How many of the newest change-feed entries (GET /changes) are kept; "
        "older ones are pruned, and a reader behind them gets 410.",
    )
    changes_prune_interval: float = Field(
        default=60.0,
        gt=0,
        description="Seconds between two prunings of the change feed by each API worker.",
    )
    changes_max_wait: int = Field(
        default=60,
        ge=0,
        le=3600,
        description="Longest wait, in seconds, of GET /changes?wait=S; a longer wait asked "
        "for is cut to this.",
    )
    changes_poll_interval: float = Field(
        default=5.0,
        gt=0,
        description="While GET /changes waits, how often it re-reads the feed anyway: the "
        "safety net for a missed notification (SQLite with several workers, or the "
        "PostgreSQL LISTEN connection being re-established).",
    )
    changes_notify_interval: float = Field(
        default=0.01,
        ge=0,
        le=10,
        description="PostgreSQL: the shortest time between two notifications by which an API "
        "worker tells the others that its writes recorded changes (the writes themselves "
        "send none); the delay a waiting GET /changes may add, for a bounded cost under "
        "many writes.",
    )
    changes_cache_size: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="How many of the newest changes each API worker keeps in memory: waiting "
        "and streaming readers are served from them (one database read per change for all "
        "of them); an older reader reads the database.",
    )
    changes_max_waiters: int = Field(
        default=5_000,
        ge=0,
        description="Most GET /changes?wait=S long-polls one API worker holds at once; past "
        "it a 503 with Retry-After.",
    )
    changes_max_streams: int = Field(
        default=1_000,
        ge=0,
        description="Most GET /changes event streams one API worker holds at once; past it "
        "a 503 with Retry-After.",
    )
