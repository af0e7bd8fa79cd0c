"""Agent configuration: CLI options over ``PLACEMENT_AGENT_*`` variables over a YAML file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from placement_client.auth import DEFAULT_API_URL, DEFAULT_SECTION, AuthOptions

CONFIG_FILE_VARIABLE = "PLACEMENT_AGENT_CONFIG_FILE"
DEFAULT_CONFIG_FILE = Path("/etc/placement-agent/agent.yaml")


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PLACEMENT_AGENT_", extra="forbid")

    api_url: str | None = Field(
        default=None,
        description=(
            "Placement API endpoint. Unset: found in the Keystone catalog (service type "
            f"placement), or {DEFAULT_API_URL} with a static token."
        ),
    )
    token: SecretStr | None = Field(
        default=None,
        description=(
            "Sent as X-Auth-Token as it is: a noauth2 token (development) or a token made "
            "elsewhere. Unset: Keystone credentials from auth_config_file or OS_* variables."
        ),
    )
    auth_config_file: Path | None = Field(
        default=None,
        description=(
            "INI file with a Nova-style section of keystoneauth1 options (auth_type, "
            "auth_url, username, password, ..., region_name, valid_interfaces, "
            "endpoint_override). Wins over token and OS_* variables."
        ),
    )
    auth_section: str = Field(
        default=DEFAULT_SECTION, description="The section of auth_config_file to read."
    )
    libvirt_uri: str = Field(
        default="qemu:///system", description="libvirt connection URI of the host to report."
    )
    state_dir: Path = Field(
        default=Path("/var/lib/placement-agent"),
        description="Where the provider uuid is kept across restarts.",
    )
    instances_path: Path = Field(
        default=Path("/var/lib/libvirt/images"), description="Filesystem reported as DISK_GB."
    )
    provider_config: Path | None = Field(
        default=None, description="YAML file with custom inventory and traits."
    )
    provider_name: str | None = Field(
        default=None, description="Root provider name; the hypervisor hostname when unset."
    )
    interval: float = Field(default=60.0, gt=0, description="Seconds between passes.")
    interval_jitter: float = Field(
        default=0.1, ge=0, lt=1, description="Each wait varies by up to this fraction."
    )
    reserved_host_memory_mb: int = Field(
        default=512, ge=0, description="MEMORY_MB kept for the host: reported as reserved."
    )
    reserved_host_disk_mb: int = Field(
        default=0, ge=0, description="Disk kept for the host, in MB: reserved DISK_GB, rounded up."
    )
    reserved_host_cpus: int = Field(
        default=0, ge=0, description="VCPU kept for the host: reported as reserved."
    )
    # None means "not configured": a ratio an operator set through the API is then kept.
    cpu_allocation_ratio: float | None = Field(
        default=None,
        gt=0,
        description=(
            "VCPU allocation ratio the agent always reports; unset: a ratio set through the "
            "API is kept, else initial_cpu_allocation_ratio."
        ),
    )
    ram_allocation_ratio: float | None = Field(
        default=None,
        gt=0,
        description=(
            "MEMORY_MB allocation ratio the agent always reports; unset: a ratio set through "
            "the API is kept, else initial_ram_allocation_ratio."
        ),
    )
    disk_allocation_ratio: float | None = Field(
        default=None,
        gt=0,
        description=(
            "DISK_GB allocation ratio the agent always reports; unset: a ratio set through "
            "the API is kept, else initial_disk_allocation_ratio."
        ),
    )
    initial_cpu_allocation_ratio: float = Field(
        default=4.0,
        gt=0,
        description="VCPU ratio of a new inventory when cpu_allocation_ratio is unset.",
    )
    initial_ram_allocation_ratio: float = Field(
        default=1.0,
        gt=0,
        description="MEMORY_MB ratio of a new inventory when ram_allocation_ratio is unset.",
    )
    initial_disk_allocation_ratio: float = Field(
        default=1.0,
        gt=0,
        description="DISK_GB ratio of a new inventory when disk_allocation_ratio is unset.",
    )
    numa_providers: bool = Field(
        default=False, description="Report NUMA cells as child providers with VCPU and memory."
    )
    request_timeout: float = Field(
        default=10.0, gt=0, description="Seconds before a Placement request is abandoned."
    )
    conflict_retries: int = Field(
        default=5, ge=0, description="Retries of a write that lost a generation race."
    )
    heal_orphan_grace: float = Field(
        default=3600.0,
        ge=0,
        description=(
            "`heal --delete-orphans` removes an allocation whose domain is gone only once "
            "heal has seen it orphaned for this many seconds (a build in flight is claimed "
            "before its domain exists)."
        ),
    )
    heartbeat: bool = Field(
        default=True,
        description=(
            "After each pass that brought Placement up to date, send the host's heartbeat "
            "(PUT /resource_providers/{uuid}/heartbeat) with the utilisation libvirt gives."
        ),
    )
    disable_on_stop: bool = Field(
        default=True,
        description=(
            "`run` stopped by SIGTERM/SIGINT adds COMPUTE_STATUS_DISABLED to the host's "
            "provider, and its next start removes it (--once leaves it alone)."
        ),
    )
    metrics_port: int | None = Field(
        default=None, ge=0, le=65535, description="Serve Prometheus metrics on this port."
    )

    @field_validator("api_url")
    @classmethod
    def _strip_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value

    def auth_options(self) -> AuthOptions:
        token = self.token.get_secret_value() if self.token else None
        return AuthOptions(self.api_url, token, self.auth_config_file, self.auth_section)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls, _config_file()))


def _config_file() -> Path | None:
    configured = os.environ.get(CONFIG_FILE_VARIABLE)
    if configured:
        if not Path(configured).is_file():
            raise FileNotFoundError(f"agent config file {configured} does not exist")
        return Path(configured)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def load_settings(overrides: dict[str, Any]) -> AgentSettings:
    """Settings with the options given on the command line (None = not given) on top."""
    given = {name: value for name, value in overrides.items() if value is not None}
    return AgentSettings(**given)
