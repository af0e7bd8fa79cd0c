"""Where the API keeps its data, its connections, and how long it waits for them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

DEFAULT_SQLITE_PATH = Path("var") / "placement.sqlite"


class DatabaseSettings(BaseModel):
    """The database, its read replica and the connection pool."""

    database_url: str = Field(
        default=f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}",
        description=(
            "sqlite:///PATH, or PostgreSQL (postgresql://, postgres:// or "
            "postgresql+asyncpg://; always driven by asyncpg). MySQL and MariaDB are "
            "import sources only (`placement-api db import --source`)."
        ),
    )
    database_read_url: str | None = Field(
        default=None,
        description=(
            "PostgreSQL only, optional: a hot standby (a URL like database_url, multi-host "
            "allowed) where the GET routes without side effects read: candidates, usages, "
            "providers, inventories, allocations, traits, aggregates, resource classes, "
            "capacity, heartbeats. Writes answer X-Placement-Read-After; a read sending it "
            "back is answered from the standby only once it replayed that far, else from "
            "the primary (docs/ha.md)."
        ),
    )
    database_read_after_wait: float = Field(
        default=0.2,
        ge=0,
        description=(
            "Longest a read carrying X-Placement-Read-After waits for the standby to replay "
            "that far before the primary answers it instead."
        ),
    )
    database_read_timeout: float = Field(
        default=1.0,
        gt=0,
        description=(
            "Longest a read waits for the standby to give it a connection that answers (one "
            "free in the pool, opened, pinged; plus database_read_after_wait for a read "
            "carrying X-Placement-Read-After) before the primary answers it instead."
        ),
    )
    database_read_retry_interval: float = Field(
        default=30.0,
        ge=0,
        description=(
            "After a read found the standby unreachable, failing or slower than "
            "database_read_timeout, the worker's reads go to the primary for this many "
            "seconds; then one read tries the standby again (docs/ha.md)."
        ),
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        description=(
            "PostgreSQL connections each worker keeps open; requests beyond them queue for one "
            "(database_pool_timeout) rather than open extra sessions. A candidates request "
            "reads summaries ahead on a second one only while fewer are in use."
        ),
    )
    database_max_overflow: int = Field(
        default=0,
        ge=0,
        description=(
            "Extra PostgreSQL connections a worker may open past database_pool_size under load; "
            "each is closed when returned, so a busy server churns sessions."
        ),
    )


class DatabaseLimits(BaseModel):
    """The database's own limits, and what a client is told when it is away."""

    database_statement_timeout: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Longest one SQL statement may run (PostgreSQL statement_timeout), and with 2 s "
            "more the client-side wait for any answer: a frozen database server gives 503s "
            "within it; past it the request is a 503."
        ),
    )
    database_lock_timeout: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Longest a statement waits for a row or table lock (PostgreSQL lock_timeout), or a "
            "write for SQLite's write lock (its busy timeout); past it the request is a 503."
        ),
    )
    database_connect_timeout: float = Field(
        default=5.0,
        gt=0,
        description="Longest opening one database connection may take.",
    )
    database_pool_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Longest a request waits for a free pooled connection before a 503.",
    )
    database_wait_timeout: float = Field(
        default=60.0,
        ge=0,
        description=(
            "At start-up, how long `serve` waits for the database to answer (and be current) "
            "before giving up."
        ),
    )
    retry_after: int = Field(
        default=2,
        ge=0,
        description="Seconds sent in Retry-After with a 503 when the database is unavailable.",
    )
