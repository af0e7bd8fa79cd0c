"""What every command of ``placement-agent`` shares: the typer app, the error console,
the options that override a setting, and turning them into the agent's settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from agent.reporting_pass import Outcome
from agent.settings import (
    CONFIG_FILE_VARIABLE,
    DEFAULT_CONFIG_FILE,
    AgentSettings,
    load_settings,
)
from placement_client import PlacementClient
from placement_client.auth import SETUP_ERRORS

app = typer.Typer(
    help="Report this hypervisor's inventory and traits to Placement.",
    add_completion=False,
    invoke_without_command=True,
)
err_console = Console(stderr=True, soft_wrap=True)


def setting_help(name: str, text: str) -> str:
    """Help for an option that overrides a setting: its variable and default."""
    default = AgentSettings.model_fields[name].default
    return f"{text} (env var PLACEMENT_AGENT_{name.upper()}; default {default})"


ApiUrl = Annotated[
    str | None,
    typer.Option(
        "--api-url", help=setting_help("api_url", "Placement API endpoint (None: the catalog's).")
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        help=setting_help("token", "Static X-Auth-Token (noauth2); None: Keystone credentials."),
    ),
]
AuthConfig = Annotated[
    Path | None,
    typer.Option(
        "--auth-config",
        help=setting_help(
            "auth_config_file",
            "INI file with a Nova-style [placement] section of keystoneauth1 options.",
        ),
    ),
]
AuthSection = Annotated[
    str | None,
    typer.Option("--auth-section", help=setting_help("auth_section", "Section of --auth-config.")),
]
LibvirtUri = Annotated[
    str | None,
    typer.Option("--libvirt-uri", help=setting_help("libvirt_uri", "libvirt connection URI.")),
]
StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", help=setting_help("state_dir", "Keeps the provider uuid.")),
]
InstancesPath = Annotated[
    Path | None,
    typer.Option(
        "--instances-path",
        help=setting_help("instances_path", "Filesystem reported as DISK_GB."),
    ),
]
ProviderConfigPath = Annotated[
    Path | None,
    typer.Option(
        "--provider-config",
        help=setting_help("provider_config", "YAML custom inventory and traits."),
    ),
]
ProviderName = Annotated[
    str | None,
    typer.Option(
        "--provider-name",
        help=setting_help("provider_name", "Root provider name (None: hostname)."),
    ),
]
Interval = Annotated[
    float | None,
    typer.Option("--interval", help=setting_help("interval", "Seconds between passes.")),
]
ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help=f"YAML settings file (env var {CONFIG_FILE_VARIABLE}; "
        f"default {DEFAULT_CONFIG_FILE} when it exists).",
    ),
]


@dataclass(frozen=True)
class CommonOptions:
    """Options given before the command name, which the command's own options override."""

    options: dict[str, Any]
    config: Path | None
    once: bool
    verbose: bool


def given(**options: Any) -> dict[str, Any]:
    return {name: value for name, value in options.items() if value is not None}


def settings_from(config: Path | None, options: dict[str, Any]) -> AgentSettings:
    if config is not None:
        os.environ[CONFIG_FILE_VARIABLE] = str(config)
    try:
        return load_settings(options)
    except (ValidationError, FileNotFoundError) as error:
        err_console.print(f"[red]invalid agent settings:[/red] {error}")
        raise typer.Exit(code=Outcome.FAILED) from error


def command_settings(ctx: typer.Context, config: Path | None, **options: Any) -> AgentSettings:
    """A command's settings: the options it was given over those given before its
    name (``ctx.obj``), then the settings file and the environment."""
    common: CommonOptions = ctx.obj
    return settings_from(config or common.config, common.options | given(**options))


def connect(settings: AgentSettings) -> PlacementClient:
    try:
        return PlacementClient.connect(settings.auth_options(), timeout=settings.request_timeout)
    except SETUP_ERRORS as error:
        err_console.print(f"[red]cannot set up Placement credentials:[/red] {escape(str(error))}")
        raise typer.Exit(code=Outcome.FAILED) from error
