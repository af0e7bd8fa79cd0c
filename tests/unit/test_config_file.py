"""PLACEMENT_CONFIG_FILE: an upstream placement.conf read into our settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement_api.config_file import ConfigFileError, async_database_url
from placement_api.settings import Settings

UPSTREAM_CONF = """\
[DEFAULT]
debug = true

[api]
auth_strategy = keystone

[placement_database]
connection = postgresql+psycopg2://placement:secret@db.example:5432/placement?sslmode=require

[oslo_policy]
policy_file = policy.yaml
enforce_scope = false
enforce_new_defaults = false

[placement]
max_allocation_candidates = 1000
randomize_allocation_candidates = true

[keystone_authtoken]
www_authenticate_uri = http://keystone.example/v3
auth_url = http://keystone.example/v3
auth_type = password
memcached_servers = 127.0.0.1:11211
"""


@pytest.fixture
def upstream_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (
        "PLACEMENT_AUTH_STRATEGY",
        "PLACEMENT_DATABASE_URL",
        "PLACEMENT_POLICY_FILE",
        "PLACEMENT_ENFORCE_SCOPE",
        "PLACEMENT_ENFORCE_NEW_DEFAULTS",
        "PLACEMENT_MAX_ALLOCATION_CANDIDATES",
        "PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES",
    ):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "placement.conf"
    path.write_text(UPSTREAM_CONF)
    monkeypatch.setenv("PLACEMENT_CONFIG_FILE", str(path))
    return path


def test_upstream_options_become_settings(upstream_conf: Path) -> None:
    settings = Settings()
    assert settings.config_file == upstream_conf
    assert settings.auth_strategy == "keystone"
    assert settings.database_url == (
        "postgresql+asyncpg://placement:secret@db.example:5432/placement?ssl=require"
    )
    # Relative, as oslo.policy reads it: beside the config file.
    assert settings.policy_file == upstream_conf.parent / "policy.yaml"
    assert (settings.enforce_scope, settings.enforce_new_defaults) == (False, False)
    assert settings.max_allocation_candidates == 1000
    assert settings.randomize_allocation_candidates is True


def test_environment_overrides_the_file(
    upstream_conf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLACEMENT_AUTH_STRATEGY", "noauth2")
    monkeypatch.setenv("PLACEMENT_ENFORCE_SCOPE", "true")
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", "sqlite+aiosqlite:///x.sqlite")
    settings = Settings()
    assert settings.auth_strategy == "noauth2"
    assert settings.enforce_scope is True
    assert settings.database_url == "sqlite+aiosqlite:///x.sqlite"
    # What the environment leaves alone still comes from the file.
    assert settings.enforce_new_defaults is False


def test_arguments_override_the_file(upstream_conf: Path) -> None:
    assert Settings(max_allocation_candidates=5).max_allocation_candidates == 5


def test_a_config_file_given_as_argument_is_read(
    upstream_conf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLACEMENT_CONFIG_FILE")
    assert Settings(config_file=upstream_conf).auth_strategy == "keystone"


def test_options_the_file_leaves_out_keep_their_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLACEMENT_ENFORCE_SCOPE", raising=False)
    path = tmp_path / "placement.conf"
    path.write_text("[placement]\nrandomize_allocation_candidates = true\n")
    settings = Settings(config_file=path)
    assert settings.randomize_allocation_candidates is True
    assert settings.enforce_scope is True


def test_missing_config_file_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"absent\.conf: no such file$"):
        Settings(config_file=tmp_path / "absent.conf")


@pytest.mark.parametrize(
    ("connection", "expected"),
    [
        ("postgresql://u:p@h/db", "postgresql+asyncpg://u:p@h/db"),
        ("postgresql+psycopg2://u:p@h:6432/db", "postgresql+asyncpg://u:p@h:6432/db"),
        ("postgresql+psycopg://u@h/db?client_encoding=utf8", "postgresql+asyncpg://u@h/db"),
        (
            "sqlite:////var/lib/placement/placement.sqlite",
            "sqlite+aiosqlite:////var/lib/placement/placement.sqlite",
        ),
    ],
)
def test_oslo_db_urls_become_async_urls(connection: str, expected: str) -> None:
    assert async_database_url(connection) == expected


@pytest.mark.parametrize("connection", ["mysql+pymysql://u:p@h/placement", "mysql://u@h/db"])
def test_mysql_is_refused_with_the_way_out(connection: str) -> None:
    with pytest.raises(ValueError, match="db import"):
        async_database_url(connection)
