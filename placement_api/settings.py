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
    database_pool_size: int = Field(default=10, ge=1)
    auth_strategy: Literal["noauth2"] = "noauth2"
    cors_allowed_origins: CommaList = Field(default_factory=list)
    cors_allow_headers: CommaList = Field(default_factory=list)
    policy_file: Path | None = None
    enforce_new_defaults: bool = True
    randomize_allocation_candidates: bool = False
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
