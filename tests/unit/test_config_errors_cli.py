"""A config file or Keystone configuration that cannot be used stops ``serve`` with
one line naming the file and key, and exit 2; ``status`` reports it as a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.db.test_capacity_files_cli import _row
from tests.db.test_operator_cli import run_in

KEYSTONE = {"PLACEMENT_AUTH_STRATEGY": "keystone"}


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "placement.conf"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "env", "heading", "reason"),
    [
        (None, {}, "invalid config file", "no such file"),
        ("[api\nauth_strategy = keystone\n", {}, "invalid config file", "not an INI file: line 1"),
        (
            "[placement]\nmax_allocation_candidates = lots\n",
            {},
            "invalid config file",
            "[placement] max_allocation_candidates: invalid literal for int()",
        ),
        (
            "[placement_database]\nconnection = mysql+pymysql://u@h/placement\n",
            {},
            "invalid config file",
            "[placement_database] connection: mysql is not supported",
        ),
        (
            "[keystone_authtoken]\ndelay_auth_decision = maybe\n",
            KEYSTONE,
            "invalid keystone configuration",
            "[keystone_authtoken] delay_auth_decision: Unexpected boolean value 'maybe'",
        ),
        (
            "[keystone_authtoken]\nauth_type = nosuch\n",
            KEYSTONE,
            "invalid keystone configuration",
            "[keystone_authtoken]: The plugin nosuch could not be found",
        ),
        (
            "[keystone_authtoken]\nauth_type = password\nusername = placement\n",
            KEYSTONE,
            "invalid keystone configuration",
            "[keystone_authtoken]: Auth plugin requires parameters which were not given: auth_url",
        ),
    ],
)
def test_serve_refuses_a_bad_configuration_in_one_line(
    tmp_path: Path, text: str | None, env: dict[str, str], heading: str, reason: str
) -> None:
    path = tmp_path / "placement.conf" if text is None else _config(tmp_path, text)
    result = run_in(tmp_path, "serve", "--port", "1", PLACEMENT_CONFIG_FILE=str(path), **env)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{heading}: PLACEMENT_CONFIG_FILE={path}: {reason}")


def test_serve_refuses_keystone_without_a_config_file(tmp_path: Path) -> None:
    result = run_in(tmp_path, "serve", "--port", "1", **KEYSTONE)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "invalid keystone configuration: PLACEMENT_AUTH_STRATEGY=keystone needs "
        "PLACEMENT_CONFIG_FILE: a placement.conf whose [keystone_authtoken] section "
        "configures keystonemiddleware"
    ]


@pytest.mark.parametrize(
    "command",
    [("db", "upgrade"), ("db", "import", "--source", "postgresql://u@h/p"), ("audit",)],
)
def test_every_command_refuses_a_missing_config_file_in_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "placement.conf"
    result = run_in(tmp_path, *command, PLACEMENT_CONFIG_FILE=str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"invalid config file: PLACEMENT_CONFIG_FILE={path}: no such file"
    ]


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    result = run_in(tmp_path, "serve", "--port", "1", PLACEMENT_CONFIG_FILE=str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"invalid config file: PLACEMENT_CONFIG_FILE={tmp_path}: not a file"
    ]


def test_status_reports_a_config_file_it_cannot_use(tmp_path: Path) -> None:
    path = _config(tmp_path, "[placement]\nmax_allocation_candidates = lots\n")
    result = run_in(tmp_path, "status", COLUMNS="300", PLACEMENT_CONFIG_FILE=str(path))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert _row(result.stdout, "Config file") == [
        "Failure",
        f"PLACEMENT_CONFIG_FILE={path}: [placement] max_allocation_candidates: "
        "invalid literal for int() with base 10: 'lots'",
    ]


def test_status_reports_a_keystone_configuration_it_cannot_use(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite"
    path = _config(tmp_path, "[keystone_authtoken]\nauth_type = nosuch\n")
    env = {"PLACEMENT_DATABASE_URL": url, "PLACEMENT_CONFIG_FILE": str(path), **KEYSTONE}
    bad = run_in(tmp_path, "status", COLUMNS="300", **env)
    assert bad.returncode == 2, bad.stderr
    assert _row(bad.stdout, "Config file") == ["Success", f"{path} parses"]
    assert _row(bad.stdout, "Authentication") == [
        "Failure",
        f"PLACEMENT_CONFIG_FILE={path}: [keystone_authtoken]: The plugin nosuch could not be found",
    ]
    path.write_text("[keystone_authtoken]\nwww_authenticate_uri = http://keystone.example/v3\n")
    good = run_in(tmp_path, "status", COLUMNS="300", **env)
    assert _row(good.stdout, "Authentication") == [
        "Success",
        f"keystone: [keystone_authtoken] of {path}",
    ]
