"""Settings come from options, PLACEMENT_AGENT_* variables and a YAML file, in that order."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.settings import CONFIG_FILE_VARIABLE, load_settings
from agent.state import AgentState, StateError, StateStore


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch):
    import os

    for name in list(os.environ):
        if name.startswith("PLACEMENT_AGENT_"):
            monkeypatch.delenv(name)


def test_defaults_follow_the_contract():
    settings = load_settings({})

    assert settings.libvirt_uri == "qemu:///system"
    assert settings.interval == 60.0
    assert settings.cpu_allocation_ratio is None
    assert settings.initial_cpu_allocation_ratio == 4.0
    assert settings.numa_providers is False


def test_environment_variables_use_the_agent_prefix(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PLACEMENT_AGENT_LIBVIRT_URI", "test:///default")
    monkeypatch.setenv("PLACEMENT_AGENT_TOKEN", "admin")
    monkeypatch.setenv("PLACEMENT_AGENT_RESERVED_HOST_MEMORY_MB", "2048")

    settings = load_settings({})

    assert settings.libvirt_uri == "test:///default"
    assert settings.token is not None
    assert settings.token.get_secret_value() == "admin"
    assert settings.reserved_host_memory_mb == 2048


def test_options_beat_environment_which_beats_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    config = tmp_path / "agent.yaml"
    config.write_text("interval: 30\nreserved_host_cpus: 2\napi_url: http://file:8778/\n")
    monkeypatch.setenv(CONFIG_FILE_VARIABLE, str(config))
    monkeypatch.setenv("PLACEMENT_AGENT_INTERVAL", "45")

    settings = load_settings({"api_url": "http://option:8778/", "state_dir": None})

    assert settings.api_url == "http://option:8778"
    assert settings.interval == 45
    assert settings.reserved_host_cpus == 2


def test_missing_config_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(CONFIG_FILE_VARIABLE, str(tmp_path / "absent.yaml"))

    with pytest.raises(FileNotFoundError):
        load_settings({})


def test_unknown_settings_in_the_file_are_rejected(tmp_path: Path, monkeypatch):
    config = tmp_path / "agent.yaml"
    config.write_text("intervall: 30\n")
    monkeypatch.setenv(CONFIG_FILE_VARIABLE, str(config))

    with pytest.raises(ValidationError, match="intervall"):
        load_settings({})


def test_state_round_trips_and_survives_a_new_store(tmp_path: Path):
    state = AgentState(
        root_provider_uuid="7a3c1d2e-0000-4000-8000-000000000001",
        configured_traits={"7a3c1d2e-0000-4000-8000-000000000001": ["CUSTOM_A"]},
    )
    StateStore(tmp_path / "nested").save(state)

    loaded = StateStore(tmp_path / "nested").load()

    assert loaded == state
    assert loaded.configured_traits_of(state.root_provider_uuid) == {"CUSTOM_A"}
    assert [p.name for p in (tmp_path / "nested").iterdir()] == ["provider.json"]


def test_missing_state_is_none_and_damaged_state_is_an_error(tmp_path: Path):
    store = StateStore(tmp_path)
    assert store.load() is None

    store.path.write_text("{not json")

    with pytest.raises(StateError, match="damaged"):
        store.load()
