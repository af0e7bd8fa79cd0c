"""Who may call the API: authentication, CORS and policy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import NoDecode

CommaList = Annotated[list[str], NoDecode]


class AccessSettings(BaseModel):
    """Authentication (noauth2 or Keystone), CORS and policy."""

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

    @field_validator("cors_allowed_origins", "cors_allow_headers", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value
