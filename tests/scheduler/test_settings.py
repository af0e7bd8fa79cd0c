"""Scheduler settings: environment, YAML file, precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.settings import DEFAULT_FILTERS, SchedulerSettings

AGGREGATE = "11111111-1111-4111-8111-111111111111"


def test_defaults_listen_on_8779_with_the_default_plugins() -> None:
    settings = SchedulerSettings()
    assert settings.port == 8779
    assert settings.enabled_filters == DEFAULT_FILTERS


def test_environment_gives_lists_as_commas_and_mappings_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLACEMENT_SCHEDULER_ENABLED_FILTERS", "compute_enabled, availability_zone")
    monkeypatch.setenv("PLACEMENT_SCHEDULER_WEIGHER_MULTIPLIERS", '{"ram": 2.5}')
    monkeypatch.setenv("PLACEMENT_SCHEDULER_API_URL", "http://placement:8778")
    settings = SchedulerSettings()
    assert settings.enabled_filters == ["compute_enabled", "availability_zone"]
    assert settings.weigher_multipliers == {"ram": 2.5}
    assert settings.api_url == "http://placement:8778"


def test_yaml_file_is_below_environment_and_explicit_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        f"strategy: pack\nport: 9000\nhost_subset_size: 3\n"
        f"aggregates:\n  {AGGREGATE}: {{availability_zone: az1, metadata: {{storage: ssd}}}}\n"
    )
    monkeypatch.setenv("PLACEMENT_SCHEDULER_CONFIG_FILE", str(config))
    monkeypatch.setenv("PLACEMENT_SCHEDULER_HOST_SUBSET_SIZE", "2")
    settings = SchedulerSettings(port=9100)
    assert settings.strategy == "pack"
    assert settings.host_subset_size == 2
    assert settings.port == 9100
    assert settings.aggregates[AGGREGATE].availability_zone == "az1"
    assert settings.aggregates[AGGREGATE].metadata == {"storage": "ssd"}


def test_a_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        SchedulerSettings(config_file=tmp_path / "absent.yaml")
