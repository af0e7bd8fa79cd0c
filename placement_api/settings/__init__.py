"""Service configuration: arguments, then the environment (prefix ``PLACEMENT_``),
then ``PLACEMENT_CONFIG_FILE`` (``placement_api.config_file``), then defaults.

The settings come in groups, a mixin each (``database``, ``access``,
``candidates``, ``limits``, ``change_feed``, ``observability``, ``capacity``,
``heartbeats``); ``Settings`` is all of them under the one prefix."""

from __future__ import annotations

from functools import lru_cache

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from placement_api.config_file import ConfigFileSource
from placement_api.settings.access import AccessSettings
from placement_api.settings.candidates import CandidatesSettings
from placement_api.settings.capacity import CapacitySettings
from placement_api.settings.change_feed import ChangeFeedSettings
from placement_api.settings.database import DatabaseLimits, DatabaseSettings
from placement_api.settings.heartbeats import HeartbeatSettings
from placement_api.settings.limits import RequestLimits, ServingLimits
from placement_api.settings.observability import LoggingAndHealthSettings, MetricsSettings


# pydantic lists the fields of the last base first: the groups are named
# last to first, so that the fields (and docs/configuration.md) read from
# the database to the heartbeats.
class Settings(
    HeartbeatSettings,
    LoggingAndHealthSettings,
    CapacitySettings,
    MetricsSettings,
    ChangeFeedSettings,
    DatabaseLimits,
    ServingLimits,
    RequestLimits,
    CandidatesSettings,
    AccessSettings,
    DatabaseSettings,
    BaseSettings,
):
    model_config = SettingsConfigDict(env_prefix="PLACEMENT_", extra="ignore")

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
