"""The three programs' small conventions: --version, usage errors instead of
tracebacks, one syntax for amounts, misspelt variables named, tables as wide as
their contents and -f json|csv|value."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agent.cli import app as agent_app
from agent.settings import AgentSettings
from placement_api.cli.main import app as api_app
from placement_api.db import migrations
from placement_api.operator.capacity import parse_flavor_option
from placement_api.settings import Settings
from placement_client.environment import known_variables, unknown_variables
from scheduler.cli import _pairs
from scheduler.cli import app as scheduler_app
from scheduler.serving.logs import logging_config as scheduler_logging
from tests.support.server import free_port


@pytest.mark.parametrize(
    ("app", "program"),
    [
        (api_app, "placement-api"),
        (agent_app, "placement-agent"),
        (scheduler_app, "placement-scheduler"),
    ],
)
def test_every_program_prints_its_version(app: typer.Typer, program: str) -> None:
    result = CliRunner().invoke(app, ["--version"], prog_name=program)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{program} ")
    assert result.output.split()[1][0].isdigit()


def test_a_port_out_of_range_is_a_usage_error() -> None:
    result = CliRunner().invoke(api_app, ["serve", "--port", "99999"])
    assert result.exit_code == 2
    assert "65535" in result.output


def test_an_unknown_log_level_is_a_usage_error_naming_the_choices() -> None:
    result = CliRunner().invoke(api_app, ["serve", "--log-level", "verbose"])
    assert result.exit_code == 2
    assert "verbose" in result.output
    assert "debug" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_schedule_without_resources_says_which_options_give_them() -> None:
    result = CliRunner().invoke(scheduler_app, ["schedule"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "asks for no resources" in text
    assert "--resource CLASS:N" in text
    assert "pydantic" not in text
    assert "input_value" not in text


def test_amounts_take_placements_syntax_and_class_equals_n_alike() -> None:
    assert _pairs(["VCPU:2,MEMORY_MB=512", "disk_gb=1"], "--resource") == {
        "VCPU": 2,
        "MEMORY_MB": 512,
        "DISK_GB": 1,
    }
    with pytest.raises(typer.BadParameter):
        _pairs(["VCPU"], "--resource")
    colon, equals = parse_flavor_option("small=VCPU:4"), parse_flavor_option("small=VCPU=4")
    assert colon == equals
    assert not isinstance(colon, str)


def test_a_misspelt_variable_is_named_with_the_closest_setting() -> None:
    known = known_variables("PLACEMENT_", Settings, api_app)
    environ = {
        "PLACEMENT_DATABSE_URL": "sqlite://",
        "PLACEMENT_PORT": "8778",  # an option's variable, not a setting's
        "PLACEMENT_AGENT_API_URL": "http://a",  # the agent's
        "PLACEMENT_TEST_BACKENDS": "sqlite",
    }
    assert unknown_variables("PLACEMENT_", known, environ) == {
        "PLACEMENT_DATABSE_URL": "PLACEMENT_DATABASE_URL"
    }
    agent_known = known_variables("PLACEMENT_AGENT_", AgentSettings, agent_app)
    found = unknown_variables("PLACEMENT_AGENT_", agent_known, {"PLACEMENT_AGENT_LIBVIRTURI": "x"})
    assert found == {"PLACEMENT_AGENT_LIBVIRTURI": "PLACEMENT_AGENT_LIBVIRT_URI"}


def _api(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_")}
    return subprocess.run(
        [sys.executable, "-m", "placement_api", *args],
        env=environment | {"PLACEMENT_DATABASE_URL": url, "PLACEMENT_DATABSE_URL": "typo"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_status_as_json_and_tables_not_cut_when_piped(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite"
    migrations.upgrade(url)
    document = _api("status", "--format", "json", url=url)
    assert document.returncode == 1  # warnings: noauth2 and SQLite
    checks = json.loads(document.stdout)["checks"]
    assert {c["check"]: c["result"] for c in checks}["Authentication"] == 1
    assert "did you mean PLACEMENT_DATABASE_URL?" in document.stderr

    table = _api("status", url=url)
    assert "noauth2 trusts any token: for tests only; set PLACEMENT_AUTH_STRATEGY=keystone" in (
        table.stdout
    )
    rules = _api("policy", "list", "-f", "value", url=url)
    assert "project_reader_api (role:reader and project_id:%(project_id)s) default" in (
        rules.stdout.splitlines()
    )


def test_release_deletes_so_it_needs_the_schedulers_url() -> None:
    result = CliRunner().invoke(
        scheduler_app, ["release", "0f0e0d0c-0000-4000-8000-00000000a001"], env={}
    )
    assert result.exit_code == 2
    assert "--url" in result.output
    assert "127.0.0.1:8779" in result.output


def test_scheduler_log_lines_carry_their_time() -> None:
    config = scheduler_logging("info")
    formatter = logging.Formatter(config["formatters"]["default"]["format"])
    record = logging.LogRecord("scheduler.test", logging.INFO, __file__, 1, "decided", None, None)
    line = formatter.format(record)
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO scheduler.test: decided$", line)
    # uvicorn's own lines go through the same handler, so they carry it too.
    assert config["loggers"]["uvicorn"]["propagate"] is True
    assert config["root"]["handlers"] == ["stderr"]


def test_decommission_names_the_placement_it_could_not_reach() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_")}
    result = subprocess.run(
        [sys.executable, "-m", "agent", "decommission", "compute-9", "--api-url", url,
         "--token", "admin"],
        env=environment, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"cannot reach Placement at {url}/" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
