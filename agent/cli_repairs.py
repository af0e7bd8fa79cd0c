"""``placement-agent heal`` and ``decommission``: the commands that change Placement
on the operator's word (missing allocations, orphans, a dead host's tree)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from agent import decommission as decommissioning
from agent import heal as healing
from agent.cli_common import (
    ApiUrl,
    AuthConfig,
    AuthSection,
    ConfigFile,
    LibvirtUri,
    ProviderName,
    StateDir,
    Token,
    app,
    command_settings,
    connect,
    err_console,
    setting_help,
)
from agent.heal_fleet import Target, heal_hosts, parse_target
from agent.placement import AgentPlacement
from agent.reporting_pass import Outcome
from agent.settings import AgentSettings
from agent.state import StateError
from placement_client.auth import DEFAULT_API_URL, keystone_in_environment


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
    settings = command_settings(
        ctx,
        config,
        api_url=api_url,
        token=token,
        auth_config_file=auth_config,
        auth_section=auth_section,
    )
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
    async with connect(settings) as client:
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
            "--grace",
            help=setting_help("heal_orphan_grace", "Seconds an orphan is kept."),
            min=0,
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
    settings = command_settings(
        ctx,
        config,
        api_url=api_url,
        token=token,
        auth_config_file=auth_config,
        auth_section=auth_section,
        libvirt_uri=libvirt_uri,
        state_dir=state_dir,
        provider_name=provider_name,
        heal_orphan_grace=grace,
    )
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
    async with connect(settings) as client:
        return await heal_hosts(settings, client, targets, options)
