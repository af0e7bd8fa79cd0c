"""``placement-agent``: report this hypervisor to Placement, once or periodically."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from prometheus_client import start_http_server
from rich.console import Console

from agent import cli_repairs
from agent.cli_common import (
    ApiUrl,
    AuthConfig,
    AuthSection,
    CommonOptions,
    ConfigFile,
    InstancesPath,
    Interval,
    LibvirtUri,
    ProviderConfigPath,
    ProviderName,
    StateDir,
    Token,
    app,
    command_settings,
    connect,
    err_console,
    given,
    settings_from,
)
from agent.daemon import run_until_stopped, stop_on_signals
from agent.placement import AgentPlacement
from agent.reporting_pass import (
    PASS_FAILURES,
    Outcome,
    PassResult,
    ReportingPass,
    discover,
    plan_for,
)
from agent.settings import CONFIG_FILE_VARIABLE, AgentSettings
from agent.show import plan_document, print_plan
from agent.state import StateStore
from placement_client.environment import known_variables, warn_unknown_variables
from placement_client.program_version import VersionOption

log = logging.getLogger("agent")

Once = Annotated[
    bool,
    typer.Option(
        "--once",
        help="One pass, then exit: 0 in sync, 1 failed, 3 drift found, 4 a class kept in use.",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Log debug details.")]


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
    options = given(
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
        ctx.obj = CommonOptions(options, config, once, verbose)


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
    common: CommonOptions = ctx.obj
    options = common.options | given(
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


def _run(options: dict[str, Any], config: Path | None, once: bool, verbose: bool) -> None:
    _configure_logging(verbose)
    settings = settings_from(config, options)
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


async def _one_pass(settings: AgentSettings) -> PassResult:
    async with connect(settings) as client:
        return await ReportingPass(settings, AgentPlacement(client)).run()


async def _run_forever(settings: AgentSettings) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    where = settings.api_url or "the catalog's Placement"
    log.info("reporting %s to %s every %ss", settings.libvirt_uri, where, settings.interval)
    async with connect(settings) as client:
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
    settings = command_settings(
        ctx,
        config,
        libvirt_uri=libvirt_uri,
        state_dir=state_dir,
        instances_path=instances_path,
        provider_config=provider_config,
        provider_name=provider_name,
    )
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


__all__ = ["app", "cli_repairs", "main"]  # cli_repairs registers decommission and heal


def main() -> None:
    known = known_variables("PLACEMENT_AGENT_", AgentSettings, app, CONFIG_FILE_VARIABLE)
    warn_unknown_variables("placement-agent", "PLACEMENT_AGENT_", known)
    app()
