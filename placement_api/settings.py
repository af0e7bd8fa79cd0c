"""Service configuration, read from the environment (prefix ``PLACEMENT_``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

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
    auth_strategy: Literal["noauth2"] = Field(
        default="noauth2", description="How requests are authenticated."
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
        description="Secure-RBAC policy defaults; false: upstream's legacy admin-only defaults.",
    )
    randomize_allocation_candidates: bool = Field(
        default=False,
        description="Shuffle candidates (trees, then providers) instead of ordering them.",
    )
    max_allocation_candidates: int = Field(
        default=-1, description="Cap on candidates generated per request; -1 means no cap."
    )

    @field_validator("cors_allowed_origins", "cors_allow_headers", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
