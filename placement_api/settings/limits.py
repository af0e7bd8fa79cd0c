"""Limits on what one request may ask of the server and how long a client may
take (issue: hostile input)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RequestLimits(BaseModel):
    """What one request may ask of the server."""

    max_json_depth: int = Field(
        default=32,
        ge=8,
        le=512,
        description=(
            "Deepest nesting of objects and arrays a JSON request body may have (the "
            "deepest Placement body, a reshape, needs 6); a deeper one is a 400."
        ),
    )
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="Largest request body accepted, in bytes; a larger one is a 413.",
    )
    max_header_bytes: int = Field(
        default=32 * 1024,
        ge=1024,
        description="Largest request line plus headers accepted, in bytes; more is a 431.",
    )
    max_query_length: int = Field(
        default=16 * 1024,
        ge=256,
        description="Longest query string accepted, in bytes; a longer one is a 414.",
    )
    max_consumers_per_write: int = Field(
        default=1000,
        ge=1,
        description="Most consumers one POST /allocations or POST /reshaper may write (413).",
    )
    max_providers_per_write: int = Field(
        default=1000,
        ge=1,
        description=(
            "Most resource providers one consumer's allocations, or one reshape's "
            "inventories, may name (413)."
        ),
    )


class ServingLimits(BaseModel):
    """Time limits, in seconds, on connections, requests and workers; how workers share the port."""

    header_read_timeout: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Time a client has to send a request's line and headers, from the connection's "
            "start or its first byte; then it gets a 408 and is closed."
        ),
    )
    body_read_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Time a client has to send a request's whole body after its headers (408).",
    )
    keep_alive_timeout: int = Field(
        default=5,
        ge=1,
        description="Idle seconds after which a keep-alive connection is closed.",
    )
    send_stall_timeout: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Longest a client may leave the server's writes unread (its answer stalled "
            "with 64 KiB buffered) before its connection is dropped."
        ),
    )
    request_timeout: float = Field(
        default=60.0,
        gt=0,
        description=(
            "Deadline of one request once read: past it the request's database work is "
            "cancelled and rolled back, and the client gets a 503."
        ),
    )
    graceful_shutdown_timeout: int = Field(
        default=30,
        ge=0,
        description=(
            "On SIGTERM, how long requests under way may run before they are cancelled "
            "(and their transactions rolled back)."
        ),
    )
    worker_healthcheck_timeout: int = Field(
        default=30,
        gt=0,
        description=(
            "With several workers, how long a worker may take to answer the supervisor's "
            "health check before it is restarted; start-up (imports, connecting) counts, "
            "and takes seconds on a loaded host."
        ),
    )
    worker_reuse_port: bool = Field(
        default=True,
        description=(
            "With several workers, each listens on a socket of its own (SO_REUSEPORT, on "
            "Linux) and the kernel spreads new connections evenly between them; false (and "
            "elsewhere): one socket shared by all, where the worker that wakes first may "
            "accept a whole burst of connections and keep them."
        ),
    )
