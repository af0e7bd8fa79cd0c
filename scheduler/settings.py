"""Scheduler configuration (env prefix ``PLACEMENT_SCHEDULER_``, optional YAML file).

Precedence, highest first: values passed in code (the CLI's options), the
environment, the YAML file named by ``config_file`` /
``PLACEMENT_SCHEDULER_CONFIG_FILE``, then the defaults below. Lists may be
given in the environment as comma-separated names; mappings as JSON.

Host metadata that Nova keeps in its own database is configured here:
``aggregates`` maps Placement aggregate uuids to an availability zone and
free-form metadata. Which providers belong to an aggregate is read from
Placement, so the operator manages membership in one place.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from flavors.aggregates import AggregateConfig
from flavors.pci_alias import PciAlias
from placement_client.auth import (
    DEFAULT_API_URL,
    DEFAULT_SECTION,
    AuthOptions,
    keystone_in_environment,
)

ENV_PREFIX = "PLACEMENT_SCHEDULER_"
# What the scheduler sends to a noauth2 API when no credentials are configured.
DEVELOPMENT_TOKEN = "admin"
DEFAULT_PORT = 8779

DEFAULT_FILTERS = [
    "ignore_hosts",
    "force_hosts",
    "availability_zone",
    "compute_enabled",
    "liveness",
    "metrics",
    "image_properties",
    "same_host",
    "different_host",
    "server_group_affinity",
    "server_group_anti_affinity",
    "aggregate_extra_specs",
    "numa_topology",
]
DEFAULT_WEIGHERS = [
    "ram",
    "cpu",
    "disk",
    "instance_count",
    "metrics",
    "server_group_soft_affinity",
    "server_group_soft_anti_affinity",
]
# Instance counts cost one Placement read per host, so they weigh nothing
# unless an operator asks for them.
DEFAULT_MULTIPLIERS = {"instance_count": 0.0}

CommaList = Annotated[list[str], NoDecode]


class SchedulerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    config_file: Path | None = Field(default=None, description="YAML file of these settings.")
    api_url: str | None = Field(
        default=None,
        description=(
            "Placement API root. Unset: found in the Keystone catalog (service type "
            f"placement), or {DEFAULT_API_URL} with a static token."
        ),
    )
    token: str | None = Field(
        default=None,
        description=(
            "Sent as X-Auth-Token as it is: a noauth2 token (development) or a token made "
            "elsewhere. Unset: Keystone credentials from auth_config_file or OS_* variables; "
            f"with neither, the noauth2 token {DEVELOPMENT_TOKEN!r}."
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
    host: str = Field(default="127.0.0.1", description="Address `serve` listens on.")
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535, description="Port `serve` listens on.")
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds before a Placement request is abandoned."
    )
    max_allocation_candidates: int = Field(
        default=1000, ge=1, description="The `limit` sent to GET /allocation_candidates."
    )
    host_subset_size: int = Field(
        default=1, ge=1, description="Choose at random among this many best hosts."
    )
    max_attempts: int = Field(
        default=3, ge=1, description="Hosts per instance: the selection plus alternates."
    )
    claim_attempts: int = Field(
        default=5, ge=1, description="Hosts tried per instance when claims lose races."
    )
    feasible_hosts_to_score: int = Field(
        default=100,
        ge=0,
        description=(
            "Stop looking once this many hosts have room and pass every filter, and weigh "
            "those (0: examine and weigh every candidate). The search starts where the "
            "previous one stopped, so every host is reached in turn; fewer feasible hosts "
            "than this means every host was examined."
        ),
    )
    claim_batch_size: int = Field(
        default=50,
        ge=1,
        description=(
            "Most claims written together in one POST /allocations: claims decided while "
            "claim_batches_in_flight writes are outstanding wait and go together in the "
            "next one (1: every claim in its own request, sent at once)."
        ),
    )
    claim_batches_in_flight: int = Field(
        default=2, ge=1, description="Claim writes outstanding at once (see claim_batch_size)."
    )
    enabled_filters: CommaList = Field(
        default_factory=lambda: list(DEFAULT_FILTERS),
        description="Filters that run, by name (`placement-scheduler plugins` lists them all).",
    )
    enabled_weighers: CommaList = Field(
        default_factory=lambda: list(DEFAULT_WEIGHERS),
        description="Weighers whose normalised scores, times their multipliers, are summed.",
    )
    weigher_multipliers: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_MULTIPLIERS),
        description="Multiplier per weigher name; 1.0 when absent.",
    )
    strategy: Literal["spread", "pack", "chance"] = Field(
        default="spread",
        description=(
            "spread prefers hosts with the most free resources, pack the fewest; chance "
            "picks at random among every host that passes the filters, without weighing."
        ),
    )
    metrics_weight_setting: Annotated[dict[str, float], NoDecode] = Field(
        default_factory=dict,
        description=(
            "Metrics the metrics weigher sums, as name=ratio pairs like Nova's "
            "weight_setting, e.g. `cpu.percent=-1.0,memory.used=-0.5` (names as hosts "
            "report them with their heartbeats; a negative ratio prefers idle hosts). "
            "Empty: the metrics weigher and filter do nothing."
        ),
    )
    metrics_required: bool = Field(
        default=False,
        description=(
            "Hosts without fresh values of every metric in metrics_weight_setting: "
            "true rejects them (metrics filter), false weighs them lowest. Metrics are "
            "fresh while the host's heartbeat is."
        ),
    )
    max_instances_per_host: int = Field(
        default=50, ge=1, description="Limit of the max_instances_per_host filter."
    )
    default_availability_zone: str = Field(
        default="nova", description="Zone of hosts in no aggregate that names one."
    )
    aggregates: dict[str, AggregateConfig] = Field(
        default_factory=dict,
        description=(
            "Placement aggregate uuid -> {name, availability_zone, metadata}: what Nova keeps "
            "in its own database (membership is read from Placement)."
        ),
    )
    pci_alias: list[PciAlias] = Field(
        default_factory=list,
        description=(
            "PCI aliases for the pci_passthrough:alias extra spec, in Nova's [pci] alias "
            "format as a JSON list: name, vendor_id, product_id, device_type, numa_policy, "
            "resource_class, traits (docs/extra-specs.md)."
        ),
    )
    provider_cache_seconds: float = Field(
        default=60.0, ge=0, description="How long provider names, aggregates and counts are kept."
    )
    host_cache_seconds: float = Field(
        default=10.0,
        ge=0,
        description=(
            "How long an allocation candidates answer is reused for requests of the same "
            "shape (0: read for every request). Claims stay atomic in Placement either way; "
            "this bounds how late the scheduler sees other writers' changes."
        ),
    )
    host_cache_source: Literal["feed", "timer"] = Field(
        default="feed",
        description=(
            "feed: keep cached candidates current by following Placement's change feed "
            "(GET /changes), read again only when a write may change which hosts they list, "
            "a claim is refused or the feed has a gap; host_cache_seconds applies only while "
            "the feed does not answer, and always when Placement has no feed (upstream). "
            "timer: re-read every host_cache_seconds."
        ),
    )
    changes_wait_seconds: int = Field(
        default=30,
        ge=1,
        le=3600,
        description=(
            "How long one GET /changes waits for a change (at most half of request_timeout)."
        ),
    )
    changes_pace_seconds: float = Field(
        default=0.05,
        ge=0,
        le=10,
        description=(
            "After an answer of GET /changes, wait this long before asking again, so that "
            "one answer carries the changes of many writes (0: ask at once). Other "
            "writers' changes are seen this much later at most."
        ),
    )
    host_cache_shapes: int = Field(
        default=32, ge=1, description="Request shapes whose candidates are kept at once."
    )
    consumer_type: str = Field(
        default="INSTANCE",
        pattern=r"^[A-Z0-9_]+$",
        description="Consumer type written with claims (Placement 1.38).",
    )
    default_project_id: str = Field(
        default="scheduler", description="Project of claims whose request names none."
    )
    default_user_id: str = Field(
        default="scheduler", description="User of claims whose request names none."
    )
    explain_max_rejections: int = Field(
        default=25, ge=0, description="Rejected hosts listed per filter in an explanation."
    )
    explain_top_hosts: int = Field(
        default=5, ge=1, description="Weighed hosts listed per instance in an explanation."
    )
    gc_young_threshold: int = Field(
        default=20_000,
        ge=1,
        description=(
            "`serve`: objects allocated (less those freed) between two collections of "
            "Python's youngest garbage-collector generation. Python's default, 700, is "
            "reached every few decisions, and collecting then took about a quarter of the "
            "scheduler's CPU."
        ),
    )

    def auth_options(self) -> AuthOptions:
        token = self.token
        if token is None and self.auth_config_file is None:
            token = None if keystone_in_environment(os.environ) else DEVELOPMENT_TOKEN
        return AuthOptions(self.api_url, token, self.auth_config_file, self.auth_section)

    @field_validator("enabled_filters", "enabled_weighers", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("metrics_weight_setting", mode="before")
    @classmethod
    def _split_weight_setting(cls, value: object) -> object:
        """``name=ratio,name=ratio`` as Nova writes it; a mapping is taken as it is."""
        if not isinstance(value, str):
            return value
        pairs = [item.strip() for item in value.split(",") if item.strip()]
        parsed: dict[str, str] = {}
        for pair in pairs:
            name, equals, ratio = pair.partition("=")
            if not equals or not name.strip():
                raise ValueError(f"{pair!r} is not name=ratio")
            parsed[name.strip()] = ratio.strip()
        return parsed

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = _named_config_file(init_settings)
        if config_file is not None:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=config_file))
        return tuple(sources)


def _named_config_file(init_settings: PydanticBaseSettingsSource) -> Path | None:
    named: object = None
    if isinstance(init_settings, InitSettingsSource):
        named = init_settings.init_kwargs.get("config_file")
    named = named or os.environ.get(f"{ENV_PREFIX}CONFIG_FILE")
    if not named:
        return None
    path = Path(str(named))
    if not path.is_file():
        raise FileNotFoundError(f"scheduler config file {path} does not exist")
    return path


@lru_cache(maxsize=1)
def get_settings() -> SchedulerSettings:
    return SchedulerSettings()
