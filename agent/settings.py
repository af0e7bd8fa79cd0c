"""Agent configuration: CLI options over ``PLACEMENT_AGENT_*`` variables over a YAML file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from agent.pci_spec import PciDeviceSpec
from agent.provider_config import class_name as _class_name
from flavors.cpu_set import format_cpu_set, parse_cpu_set
from flavors.resource_names import page_size_kib
from placement_client.auth import DEFAULT_API_URL, DEFAULT_SECTION, AuthOptions

CONFIG_FILE_VARIABLE = "PLACEMENT_AGENT_CONFIG_FILE"
DEFAULT_CONFIG_FILE = Path("/etc/placement-agent/agent.yaml")
# Linux's NR_CPUS ceiling: no host numbers a CPU at or above it.
MAX_HOST_CPUS = 8192


class ReservedHugePages(BaseModel):
    """Nova's ``reserved_huge_pages`` entry (``node:0,size:2048,count:64``) as an object."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: int = Field(ge=0)
    size: str = Field(description="Page size: 2048 (KiB), 2MB, 1GB.")
    count: int = Field(ge=0)

    @field_validator("size")
    @classmethod
    def _page_size(cls, value: str) -> str:
        page_size_kib(value)
        return value

    @property
    def size_kib(self) -> int:
        return page_size_kib(self.size)


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
        default=False,
        description=(
            "Report NUMA cells as child providers (trait HW_NUMA_ROOT) with their VCPU, PCPU, "
            "MEMORY_MB and huge pages; the root keeps DISK_GB."
        ),
    )
    cpu_dedicated_set: str | None = Field(
        default=None,
        description=(
            "Host CPUs for pinned guest CPUs, in Nova's syntax (0-3,8,^2): reported as PCPU "
            "(ratio 1.0). Set without cpu_shared_set: no VCPU is reported."
        ),
    )
    cpu_shared_set: str | None = Field(
        default=None,
        description=(
            "Host CPUs for floating guest CPUs (Nova's syntax): reported as VCPU. Unset: every "
            "host CPU when cpu_dedicated_set is unset too, else none."
        ),
    )
    pci_device_spec: list[PciDeviceSpec] = Field(
        default_factory=list,
        description=(
            "JSON list of PCI device rules (vendor_id, product_id, address, resource_class, "
            "traits), as Nova's [pci] device_spec: each matching device becomes a child "
            "provider (docs/agent.md)."
        ),
    )
    enabled_mdev_types: list[str] = Field(
        default_factory=list,
        description=(
            "Mediated-device (vGPU) types to offer, as Nova's [devices] enabled_mdev_types: "
            "each physical GPU offering one becomes a child provider with VGPU inventory."
        ),
    )
    reserved_huge_pages: list[ReservedHugePages] = Field(
        default_factory=list,
        description=(
            "JSON list of {node, size, count} (Nova's reserved_huge_pages): huge pages of a "
            "NUMA node kept for the host, reported as reserved."
        ),
    )
    mdev_classes: dict[str, Annotated[str, AfterValidator(_class_name)]] = Field(
        default_factory=dict,
        description=(
            "JSON object: mdev type -> resource class its GPUs report instead of VGPU (Nova's "
            "[mdev_<type>] mdev_class); a standard class or CUSTOM_*."
        ),
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

    @field_validator("cpu_dedicated_set", "cpu_shared_set")
    @classmethod
    def _cpu_set_parses(cls, value: str | None) -> str | None:
        if value is not None:
            parse_cpu_set(value, MAX_HOST_CPUS)
        return value

    @model_validator(mode="after")
    def _cpu_sets_apart(self) -> Self:
        both = self.dedicated_cpus() & (self.shared_cpus() or frozenset())
        if both:
            raise ValueError(
                f"CPUs {format_cpu_set(both)} are in both cpu_dedicated_set and cpu_shared_set"
            )
        return self

    def reserved_pages(self, node: int | None) -> dict[int, int]:
        """Page size KiB -> pages reserved on the node (every node's when None)."""
        found: dict[int, int] = {}
        for entry in self.reserved_huge_pages:
            if node is None or entry.node == node:
                found[entry.size_kib] = found.get(entry.size_kib, 0) + entry.count
        return found

    def dedicated_cpus(self) -> frozenset[int]:
        if self.cpu_dedicated_set is None:
            return frozenset()
        return parse_cpu_set(self.cpu_dedicated_set, MAX_HOST_CPUS)

    def shared_cpus(self) -> frozenset[int] | None:
        """None: not configured (every host CPU not dedicated, as Nova's legacy default)."""
        if self.cpu_shared_set is None:
            return None
        return parse_cpu_set(self.cpu_shared_set, MAX_HOST_CPUS)

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
