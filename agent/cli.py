"""``placement-agent``: report this hypervisor to Placement, once or periodically."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from prometheus_client import start_http_server
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from agent import decommission as decommissioning
from agent import heal as healing
from agent.daemon import run_until_stopped, stop_on_signals
from agent.heal_fleet import Target, heal_hosts, parse_target
from agent.placement import AgentPlacement
from agent.reporting_pass import (
    PASS_FAILURES,
    Outcome,
    PassResult,
    ReportingPass,
    discover,
    plan_for,
)
from agent.settings import (
    CONFIG_FILE_VARIABLE,
    DEFAULT_CONFIG_FILE,
    AgentSettings,
    load_settings,
)
from agent.show import plan_document, print_plan
from agent.state import StateError, StateStore
from placement_client import PlacementClient
from placement_client.auth import DEFAULT_API_URL, SETUP_ERRORS, keystone_in_environment
from placement_client.environment import known_variables, warn_unknown_variables
from placement_client.program_version import VersionOption

app = typer.Typer(
    help="Report this hypervisor's inventory and traits to Placement.",
    add_completion=False,
    invoke_without_command=True,
)
err_console = Console(stderr=True, soft_wrap=True)
log = logging.getLogger("agent")


def _setting(name: str, text: str) -> str:
    """Help for an option that overrides a setting: its variable and default."""
    default = AgentSettings.model_fields[name].default
    return f"{text} (env var PLACEMENT_AGENT_{name.upper()}; default {default})"


ApiUrl = Annotated[
    str | None,
    typer.Option(
        "--api-url", help=_setting("api_url", "Placement API endpoint (None: the catalog's).")
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        help=_setting("token", "Static X-Auth-Token (noauth2); None: Keystone credentials."),
    ),
]
AuthConfig = Annotated[
    Path | None,
    typer.Option(
        "--auth-config",
        help=_setting(
            "auth_config_file",
            "INI file with a Nova-style [placement] section of keystoneauth1 options.",
        ),
    ),
]
AuthSection = Annotated[
    str | None,
    typer.Option("--auth-section", help=_setting("auth_section", "Section of --auth-config.")),
]
LibvirtUri = Annotated[
    str | None,
    typer.Option("--libvirt-uri", help=_setting("libvirt_uri", "libvirt connection URI.")),
]
StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", help=_setting("state_dir", "Keeps the provider uuid.")),
]
InstancesPath = Annotated[
    Path | None,
    typer.Option(
        "--instances-path", help=_setting("instances_path", "Filesystem reported as DISK_GB.")
    ),
]
ProviderConfigPath = Annotated[
    Path | None,
    typer.Option(
        "--provider-config",
        help=_setting("provider_config", "YAML custom inventory and traits."),
    ),
]
ProviderName = Annotated[
    str | None,
    typer.Option(
        "--provider-name", help=_setting("provider_name", "Root provider name (None: hostname).")
    ),
]
Interval = Annotated[
    float | None, typer.Option("--interval", help=_setting("interval", "Seconds between passes."))
]
ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help=f"YAML settings file (env var {CONFIG_FILE_VARIABLE}; "
        f"default {DEFAULT_CONFIG_FILE} when it exists).",
    ),
]
Once = Annotated[
    bool,
    typer.Option(
        "--once",
        help="One pass, then exit: 0 in sync, 1 failed, 3 drift found, 4 a class kept in use.",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Log debug details.")]


def _settings(config: Path | None, options: dict[str, Any]) -> AgentSettings:
    if config is not None:
        os.environ[CONFIG_FILE_VARIABLE] = str(config)
    try:
        return load_settings(options)
    except (ValidationError, FileNotFoundError) as error:
        err_console.print(f"[red]invalid agent settings:[/red] {error}")
        raise typer.Exit(code=Outcome.FAILED) from error


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("httpx").setLevel(logging.DEBUG if verbose else logging.WARNING)


@app.callback()
def main_callback(
    ctx: typer.Context,
    once: Once = False,
    api_url: ApiUrl = None,
    token: Token = None,
    auth_config: AuthConfig = None,
    auth_section: AuthSection = None,
    libvirt_uri: LibvirtUri = None,
    state_dir: StateDir = None,
    instances_path: InstancesPath = None,
    provider_config: ProviderConfigPath = None,
    provider_name: ProviderName = None,
    interval: Interval = None,
    config: ConfigFile = None,
    verbose: Verbose = False,
    version: VersionOption = False,
) -> None:
    """Without a command: run periodically, or one pass with --once."""
    options = _given(
        api_url=api_url,
        token=token,
        auth_config_file=auth_config,
        auth_section=auth_section,
        libvirt_uri=libvirt_uri,
        state_dir=state_dir,
        instances_path=instances_path,
        provider_config=provider_config,
        provider_name=provider_name,
        interval=interval,
    )
    if ctx.invoked_subcommand is None:
        _run(options, config, once=once, verbose=verbose)
    else:
        ctx.obj = _CommonOptions(options, config, once, verbose)


@app.command()
def run(
    ctx: typer.Context,
    once: Once = False,
    api_url: ApiUrl = None,
    token: Token = None,
    auth_config: AuthConfig = None,
    auth_section: AuthSection = None,
    libvirt_uri: LibvirtUri = None,
    state_dir: StateDir = None,
    instances_path: InstancesPath = None,
    provider_config: ProviderConfigPath = None,
    provider_name: ProviderName = None,
    interval: Interval = None,
    config: ConfigFile = None,
    verbose: Verbose = False,
) -> None:
    """Report now and then every interval until SIGTERM/SIGINT (or once with --once)."""
    common: _CommonOptions = ctx.obj
    options = common.options | _given(
        api_url=api_url,
        token=token,
        auth_config_file=auth_config,
        auth_section=auth_section,
        libvirt_uri=libvirt_uri,
        state_dir=state_dir,
        instances_path=instances_path,
        provider_config=provider_config,
        provider_name=provider_name,
        interval=interval,
    )
    _run(
        options,
        config or common.config,
        once=once or common.once,
        verbose=verbose or common.verbose,
    )


@dataclass(frozen=True)
class _CommonOptions:
    """Options given before the command name, which the command's own options override."""

    options: dict[str, Any]
    config: Path | None
    once: bool
    verbose: bool


def _given(**options: Any) -> dict[str, Any]:
    return {name: value for name, value in options.items() if value is not None}


def _run(options: dict[str, Any], config: Path | None, once: bool, verbose: bool) -> None:
    _configure_logging(verbose)
    settings = _settings(config, options)
    if once:
        _require_reachable(settings)
        result = asyncio.run(_one_pass(settings))
        raise typer.Exit(code=int(result.outcome))
    if settings.metrics_port is not None:
        start_http_server(settings.metrics_port)
    asyncio.run(_run_forever(settings))


def _require_reachable(settings: AgentSettings) -> None:
    """A single pass against an API that is not there: say so in one line.
    (Without api_url the Keystone catalog names it, and its client reports.)"""
    if settings.api_url is None:
        return
    try:
        # Reachability only: no token is sent, so the certificate is left to
        # the pass's own client and its CA settings.
        httpx.get(f"{settings.api_url}/", timeout=settings.request_timeout, verify=False)
    except httpx.TransportError as error:
        err_console.print(
            f"[red]cannot reach Placement at {settings.api_url}[/red]: "
            f"{type(error).__name__}: {error}. Check --api-url (PLACEMENT_AGENT_API_URL) "
            "and that placement-api is running there.",
            soft_wrap=True,
        )
        raise typer.Exit(code=Outcome.FAILED) from None


def _client(settings: AgentSettings) -> PlacementClient:
    try:
        return PlacementClient.connect(settings.auth_options(), timeout=settings.request_timeout)
    except SETUP_ERRORS as error:
        err_console.print(f"[red]cannot set up Placement credentials:[/red] {escape(str(error))}")
        raise typer.Exit(code=Outcome.FAILED) from error


async def _one_pass(settings: AgentSettings) -> PassResult:
    async with _client(settings) as client:
        return await ReportingPass(settings, AgentPlacement(client)).run()


async def _run_forever(settings: AgentSettings) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    where = settings.api_url or "the catalog's Placement"
    log.info("reporting %s to %s every %ss", settings.libvirt_uri, where, settings.interval)
    async with _client(settings) as client:
        reporting = ReportingPass(settings, AgentPlacement(client), manages_host_status=True)
        await run_until_stopped(reporting, settings.interval, settings.interval_jitter, stop)
        await reporting.disable_host()


@app.command()
def show(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    libvirt_uri: LibvirtUri = None,
    state_dir: StateDir = None,
    instances_path: InstancesPath = None,
    provider_config: ProviderConfigPath = None,
    provider_name: ProviderName = None,
    config: ConfigFile = None,
) -> None:
    """Print what the agent would report, without sending anything."""
    common: _CommonOptions = ctx.obj
    options = common.options | _given(
        libvirt_uri=libvirt_uri,
        state_dir=state_dir,
        instances_path=instances_path,
        provider_config=provider_config,
        provider_name=provider_name,
    )
    settings = _settings(config or common.config, options)
    try:
        facts = discover(settings)
        state = StateStore(settings.state_dir).load()
        root_uuid = state.root_provider_uuid if state else str(uuid.uuid4())
        plan = plan_for(settings, facts, root_uuid)
    except PASS_FAILURES as error:
        err_console.print(f"[red]cannot describe the host:[/red] {error}")
        raise typer.Exit(code=Outcome.FAILED) from error
    document = plan_document(facts, plan, root_uuid_known=state is not None)
    if as_json:
        typer.echo(json.dumps(document, indent=2))
    else:
        print_plan(Console(), document)


@app.command()
def decommission(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(help="The host's root provider: its name or uuid.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and list what would go; delete nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    api_url: ApiUrl = None,
    token: Token = None,
    auth_config: AuthConfig = None,
    auth_section: AuthSection = None,
    config: ConfigFile = None,
) -> None:
    """Delete a dead host's provider tree, children first, once no allocation is left in it.

    Exit status: 0 deleted (with --dry-run: nothing stands in the way), 1 failed,
    4 consumers still hold allocations there (listed; nothing deleted), 5 the tree
    changed while it was checked or deleted (nothing more deleted; run again)."""
    common: _CommonOptions = ctx.obj
    options = common.options | _given(
        api_url=api_url, token=token, auth_config_file=auth_config, auth_section=auth_section
    )
    settings = _settings(config or common.config, options)
    _require_explicit_endpoint(settings, "decommission")
    result = asyncio.run(_decommission(settings, host, dry_run))
    if as_json:
        typer.echo(json.dumps(decommissioning.document(result, dry_run), indent=2))
    else:
        decommissioning.print_result(Console(soft_wrap=True), result)
    raise typer.Exit(code=int(result.status))


async def _decommission(
    settings: AgentSettings, host: str, dry_run: bool
) -> decommissioning.Decommission:
    async with _client(settings) as client:
        return await decommissioning.decommission(AgentPlacement(client), host, dry_run)


def _require_explicit_endpoint(settings: AgentSettings, command: str) -> None:
    """A command that deletes acts on the Placement the operator named, never on
    whatever answers at the development default."""
    if settings.api_url or settings.auth_config_file or keystone_in_environment(os.environ):
        return
    err_console.print(
        f"[red]{command} changes Placement: say which one[/red] with --api-url "
        "(PLACEMENT_AGENT_API_URL), --auth-config, or OS_* variables (the catalog's "
        f"endpoint); it does not fall back to {DEFAULT_API_URL}."
    )
    raise typer.Exit(code=Outcome.FAILED)


@app.command("heal")
def heal_command(
    ctx: typer.Context,
    delete_orphans: Annotated[
        bool,
        typer.Option(
            "--delete-orphans",
            help="Remove this host's allocations of consumers without a domain here, once "
            "heal has seen them orphaned for the grace period.",
        ),
    ] = False,
    grace: Annotated[
        float | None,
        typer.Option(
            "--grace", help=_setting("heal_orphan_grace", "Seconds an orphan is kept."), min=0
        ),
    ] = None,
    project_id: Annotated[
        str | None, typer.Option("--project-id", help="Owner of the allocations created.")
    ] = None,
    user_id: Annotated[
        str | None, typer.Option("--user-id", help="User of the allocations created.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be done; write nothing.")
    ] = False,
    hosts: Annotated[
        list[str],
        typer.Option(
            "--host",
            help="NAME=LIBVIRT_URI, repeatable: heal these hosts (root providers by name, "
            "e.g. qemu+ssh://NAME/system) in one run and report on all of them.",
        ),
    ] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
    api_url: ApiUrl = None,
    token: Token = None,
    auth_config: AuthConfig = None,
    auth_section: AuthSection = None,
    libvirt_uri: LibvirtUri = None,
    state_dir: StateDir = None,
    provider_name: ProviderName = None,
    config: ConfigFile = None,
) -> None:
    """Create missing allocations of running domains; list (or remove) orphans.

    An orphan is an allocation on this host whose domain is gone; --delete-orphans
    removes it once heal has seen it for the grace period.

    Exit status: 0 nothing left to heal, 1 failed, 3 drift left (orphans in their
    grace period or kept, domains that could not be given an allocation)."""
    common: _CommonOptions = ctx.obj
    options = common.options | _given(
        api_url=api_url,
        token=token,
        auth_config_file=auth_config,
        auth_section=auth_section,
        libvirt_uri=libvirt_uri,
        state_dir=state_dir,
        provider_name=provider_name,
        heal_orphan_grace=grace,
    )
    settings = _settings(config or common.config, options)
    _require_explicit_endpoint(settings, "heal")
    heal_options = healing.HealOptions(
        project_id, user_id, delete_orphans, settings.heal_orphan_grace, dry_run
    )
    try:
        targets = [parse_target(value) for value in hosts] or [(None, settings.libvirt_uri)]
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--host") from None
    try:
        reports = asyncio.run(_heal(settings, targets, heal_options))
    except StateError as error:
        err_console.print(f"[red]heal failed:[/red] {escape(str(error))}")
        raise typer.Exit(code=Outcome.FAILED) from None
    if as_json:
        typer.echo(json.dumps(healing.document(reports, heal_options), indent=2))
    else:
        for report in reports:
            healing.print_report(Console(soft_wrap=True), report, heal_options)
    if any(report.error for report in reports):
        raise typer.Exit(code=Outcome.FAILED)
    raise typer.Exit(code=Outcome.DRIFT if any(r.drift_left for r in reports) else Outcome.SYNCED)


async def _heal(
    settings: AgentSettings, targets: list[Target], options: healing.HealOptions
) -> list[healing.HealReport]:
    async with _client(settings) as client:
        return await heal_hosts(settings, client, targets, options)


def main() -> None:
    known = known_variables("PLACEMENT_AGENT_", AgentSettings, app, CONFIG_FILE_VARIABLE)
    warn_unknown_variables("placement-agent", "PLACEMENT_AGENT_", known)
    app()
