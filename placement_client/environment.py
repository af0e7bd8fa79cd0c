"""Misspelt ``PLACEMENT_*`` variables: pydantic-settings ignores a variable it has no
field for, so ``PLACEMENT_DATABSE_URL`` would leave the default database in use
without a word. Each program warns about the variables under its own prefix that
none of its settings or options reads, naming the closest known one."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any

import typer
import typer.main
from pydantic_settings import BaseSettings

# Prefixes of the other programs' variables, and the test suite's.
OTHER_PROGRAMS = ("PLACEMENT_AGENT_", "PLACEMENT_SCHEDULER_", "PLACEMENT_TEST_")


def known_variables(
    prefix: str, settings: type[BaseSettings], app: typer.Typer, *more: str
) -> set[str]:
    """Every variable a program reads: its settings' and its options' (``envvar=``)."""
    names = {f"{prefix}{field.upper()}" for field in settings.model_fields}
    return names | set(_option_variables(typer.main.get_command(app))) | set(more)


def _option_variables(command: Any) -> Iterable[str]:
    """``command``: typer's click command (typer carries its own copy of click)."""
    for param in command.params:
        envvar = param.envvar
        if isinstance(envvar, str):
            yield envvar
        elif envvar:
            yield from envvar
    for sub in getattr(command, "commands", {}).values():
        yield from _option_variables(sub)


def unknown_variables(
    prefix: str, known: set[str], environ: Mapping[str, str] | None = None
) -> dict[str, str | None]:
    """Variable -> the closest known name (None when none is close)."""
    environ = os.environ if environ is None else environ
    others = tuple(p for p in OTHER_PROGRAMS if p != prefix)
    unknown = sorted(
        name
        for name in environ
        if name.startswith(prefix) and not name.startswith(others) and name not in known
    )
    return {name: next(iter(difflib.get_close_matches(name, known, n=1)), None) for name in unknown}


def warn_unknown_variables(program: str, prefix: str, known: set[str]) -> None:
    for name, closest in unknown_variables(prefix, known).items():
        hint = f"; did you mean {closest}?" if closest else ""
        typer.echo(f"warning: {program} ignores {name}: no setting has that name{hint}", err=True)
