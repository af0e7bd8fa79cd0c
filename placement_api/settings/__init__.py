"""Service configuration: arguments, then the environment (prefix ``PLACEMENT_``),
then ``PLACEMENT_CONFIG_FILE`` (``placement_api.config_file``), then defaults."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from placement_api.config_file import ConfigFileSource

DEFAULT_SQLITE_PATH = Path("var") / "placement.sqlite"

CommaList = Annotated[list[str], NoDecode]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PLACEMENT_", extra="ignore")

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
    auth_strategy: Literal["noauth2", "keystone"] = Field(
        default="noauth2",
        description=(
            "noauth2: no authentication, the caller says who it is (development only); "
            "keystone: keystonemiddleware's auth_token validates every token, configured "
            "by [keystone_authtoken] in the config file."
        ),
    )
    config_file: Path | None = Field(
        default=None,
        description=(
            "An upstream-style placement.conf (INI). Its [keystone_authtoken] section "
            "configures keystonemiddleware; the options mapped in docs/keystone.md fill "
            "settings not given as PLACEMENT_* variables."
        ),
    )
    allow_insecure_noauth: bool = Field(
        default=False,
        description="Let `serve` run noauth2 on an address other than loopback.",
    )
    keystone_timeout: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds a request may wait for its token to be validated before it is "
            "answered 503; also keystonemiddleware's http_connect_timeout when the "
            "config file does not set one."
        ),
    )
    cors_allowed_origins: CommaList = Field(
        default_factory=list, description="Comma-separated origins CORS allows; empty: CORS off."
    )
    cors_allow_headers: CommaList = Field(
        default_factory=list, description="Comma-separated extra request headers CORS allows."
    )
    policy_file: Path | None = Field(
        default=None,
        description="Policy overrides (YAML/JSON, oslo.policy syntax, upstream rule names).",
    )
    enforce_new_defaults: bool = Field(
        default=True,
        description="Secure-RBAC policy defaults alone (false: each ORed with role:admin).",
    )
    enforce_scope: bool = Field(
        default=True,
        description=(
            "Check each policy rule's scope types against the token's scope, as oslo.policy "
            "does (false: a token is judged by its roles only)."
        ),
    )
    randomize_allocation_candidates: bool = Field(
        default=False,
        description="Shuffle candidates (trees, then providers) instead of ordering them.",
    )
    max_allocation_candidates: int = Field(
        default=10_000,
        description=(
            "Most candidates GET /allocation_candidates generates for one request, whatever "
            "its limit (upstream's option of the same name); -1: no cap, so a request of "
            "many granular groups over wide trees may cost the worker gigabytes."
        ),
    )
    candidates_slice_seconds: float = Field(
        default=0.02,
        gt=0,
        le=1,
        description=(
            "Longest a candidates search computes before it lets the worker's other "
            "requests run (and its own deadline cut it short)."
        ),
    )
    max_json_depth: int = Field(
        default=32,
        ge=8,
        le=512,
        description=(
            "Deepest nesting of objects and arrays a JSON request body may have (the "
            "deepest Placement body, a reshape, needs 6); a deeper one is a 400."
        ),
    )

    # Limits on what one request may ask of the server (issue: hostile input).
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
    # Time limits, in seconds.
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
    # The database's own limits.
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
    metrics_enabled: bool = Field(
        default=False,
        description="Serve GET /metrics (Prometheus) on the API's own port, to callers "
        "allowed the admin_api policy rule.",
    )
    metrics_port: int | None = Field(
        default=None,
        description="Also serve /metrics, without authentication, on this port "
        "(`placement-api serve` only); keep it off public networks.",
    )
    metrics_host: str = Field(
        default="127.0.0.1", description="Address the separate metrics port listens on."
    )
    capacity_aggregates_file: Path | None = Field(
        default=None,
        description="YAML file whose `aggregates` mapping (the scheduler's format: aggregate "
        "uuid -> name, availability_zone, metadata) names aggregates and zones in GET "
        "/capacity, `placement-api capacity` and the capacity gauges; a scheduler "
        "configuration file will do. Read once at start-up: an edit takes effect at the "
        "next start, which a bad or missing file stops (docs/capacity.md).",
    )
    capacity_default_availability_zone: str = Field(
        default="nova",
        description="Zone of hosts in no aggregate that names one, in capacity reports.",
    )
    capacity_flavors_file: Path | None = Field(
        default=None,
        description="A scheduler flavors file (YAML): the flavors whose fits the capacity "
        "gauges report, and `placement-api capacity`'s flavors when none is given. Read "
        "once at start-up: an edit takes effect at the next start, which a bad or missing "
        "file stops (docs/capacity.md).",
    )
    capacity_metrics_interval: float = Field(
        default=60.0,
        ge=0,
        description="Seconds the capacity gauges computed for one scrape are reused by "
        "the next ones (0: computed at every scrape).",
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="`text` lines or `json` lines (one object per line)."
    )
    access_log: bool = Field(
        default=True,
        description="One log line per request: request id, method, route, status, latency, "
        "user and project.",
    )
    healthcheck_timeout: float = Field(
        default=2.0,
        gt=0,
        description="Seconds /healthcheck waits for the database; also how long /metrics "
        "waits for its inventory figures before it answers openstack_placement_up 0.",
    )
    healthcheck_disable_file: Path | None = Field(
        default=None,
        description="While this file exists /healthcheck answers 503 "
        "(DISABLED BY FILE): takes a node out of a load balancer's rotation.",
    )
    # Host liveness (PUT /resource_providers/{uuid}/heartbeat, GET /heartbeats).
    heartbeat_missed_intervals: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="A host is down once this many of its own heartbeat intervals pass "
        "without a heartbeat: down_after = last_seen + this x interval.",
    )
    heartbeat_max_metrics: int = Field(
        default=64,
        ge=0,
        le=10_000,
        description="Most metrics one heartbeat may carry; more is a 400.",
    )
    heartbeat_max_metric_name_length: int = Field(
        default=64,
        ge=1,
        le=255,
        description="Longest metric name a heartbeat may carry, in characters (400).",
    )
    heartbeat_max_metric_value: float = Field(
        default=float(2**53),
        gt=0,
        description="Largest magnitude of a metric's value (400 beyond it); the default is "
        "the largest integer a float holds exactly.",
    )

    @field_validator("cors_allowed_origins", "cors_allow_headers", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Arguments, then PLACEMENT_* variables, then the config file.
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            file_secret_settings,
            ConfigFileSource(settings_cls),
        )

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
