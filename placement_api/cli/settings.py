"""The settings for a command, or one line saying what is wrong with them and exit 2."""

from __future__ import annotations

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from placement_api.config_file import ConfigFileError
from placement_api.db.urls import UnsupportedDatabaseURL, async_url
from placement_api.settings import Settings, get_settings

console = Console(stderr=True)


def command_settings() -> Settings:
    try:
        return valid_settings()
    except ConfigFileError as exc:
        console.print(f"[red]invalid config file:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(code=2) from None


def valid_settings() -> Settings:
    """The settings, or one line naming what is wrong; a config file that cannot be
    used raises ``ConfigFileError`` (``status`` reports it in its table)."""
    try:
        settings = get_settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"PLACEMENT_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        console.print(f"[red]invalid settings:[/red] {escape(problems)}", soft_wrap=True)
        raise typer.Exit(code=2) from None
    try:
        # The engine refuses it too; said here, every command says it before it starts.
        async_url(settings.database_url)
    except UnsupportedDatabaseURL as exc:
        console.print(f"[red]PLACEMENT_DATABASE_URL:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(code=2) from None
    return settings
