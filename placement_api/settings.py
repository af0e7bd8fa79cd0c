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
        description="SQLAlchemy async URL: sqlite+aiosqlite:///... or postgresql+asyncpg://...",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        description=(
            "PostgreSQL connections each worker keeps (as many again may open under load); a "
            "candidates request reads summaries ahead on a second one only while fewer are in use."
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
        default=-1, description="Cap on candidates generated per request; -1 means no cap."
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
