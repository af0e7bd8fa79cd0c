"""Every option of the three commands explains itself, and names its variable;
every command says what it does in one line."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from agent.cli import app as agent_app
from placement_api.cli.main import app as api_app
from scheduler.cli import app as scheduler_app

APPS = {
    "placement-api": api_app,
    "placement-agent": agent_app,
    "placement-scheduler": scheduler_app,
}


def _is_option(param: Any) -> bool:
    # typer vendors its own click; tell options from arguments by their kind.
    return getattr(param, "param_type_name", "") == "option" and param.name != "help"


def _options(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    for param in command.params:
        if _is_option(param):
            yield f"{path} {param.opts[0]}", param
    for name, child in getattr(command, "commands", {}).items():
        yield from _options(child, f"{path} {name}")


@pytest.mark.parametrize("program", sorted(APPS))
def test_every_option_has_help(program: str) -> None:
    command = typer.main.get_command(APPS[program])
    options = list(_options(command, program))
    assert len(options) > 3
    missing = [name for name, option in options if not option.help]
    assert missing == []


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    for name, child in getattr(command, "commands", {}).items():
        yield f"{path} {name}", child
        yield from _commands(child, f"{path} {name}")


@pytest.mark.parametrize("program", sorted(APPS))
def test_every_command_sums_itself_up_in_one_line(program: str) -> None:
    """``--help`` lists a group's commands by their help's first paragraph, line
    breaks kept (typer's rich mode): a summary wrapped in the source reads as
    broken there."""
    commands = list(_commands(typer.main.get_command(APPS[program]), program))
    assert commands
    wrapped = [
        path
        for path, command in commands
        if "\n" in inspect.cleandoc(command.help or "").split("\n\n")[0]
    ]
    missing = [path for path, command in commands if not command.help]
    assert (wrapped, missing) == ([], [])


@pytest.mark.parametrize(
    ("program", "command", "option", "variable"),
    [
        ("placement-agent", None, "--api-url", "PLACEMENT_AGENT_API_URL"),
        ("placement-agent", "run", "--state-dir", "PLACEMENT_AGENT_STATE_DIR"),
        ("placement-scheduler", "serve", "--port", "PLACEMENT_SCHEDULER_PORT"),
        ("placement-scheduler", "schedule", "--url", "PLACEMENT_SCHEDULER_URL"),
        ("placement-scheduler", "schedule", "--flavors-file", "PLACEMENT_SCHEDULER_FLAVORS_FILE"),
        ("placement-api", "serve", "--workers", "PLACEMENT_WORKERS"),
    ],
)
def test_options_backed_by_a_variable_name_it_and_their_default(
    program: str, command: str | None, option: str, variable: str
) -> None:
    group = typer.main.get_command(APPS[program])
    target: Any = group.commands[command] if command else group  # type: ignore[attr-defined]
    [found] = [p for p in target.params if _is_option(p) and option in p.opts]
    described = f"{found.help} {found.envvar or ''}"
    assert variable in described
    assert "default" in (found.help or "") or found.show_default is not False
