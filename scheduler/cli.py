"""``placement-scheduler``: serve the scheduler, or ask it for a decision."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from flavors.amounts import placement_form
from placement_client.auth import SETUP_ERRORS, load_adapter
from placement_client.environment import known_variables, warn_unknown_variables
from placement_client.log_levels import LogLevel
from placement_client.output import Format, FormatOption, emit, print_table
from placement_client.program_version import VersionOption
from scheduler import cli_moves
from scheduler.cli_common import UrlOption, app, console, errors, reaching, request_from
from scheduler.request.flavors_file import DEFAULT_FLAVORS_FILE, FLAVORS_FILE_VARIABLE
from scheduler.request.spec import ScheduleRequest
from scheduler.serving.render import render_decision, render_explanation
from scheduler.serving.service_client import (
    DEFAULT_URL,
    NoValidHostError,
    SchedulerClient,
    SchedulerServiceError,
)
from scheduler.settings import ENV_PREFIX, SchedulerSettings


@app.callback()
def _program(version: VersionOption = False) -> None:
    """Placement scheduler service."""


def _setting(name: str, text: str) -> str:
    """Help for an option that overrides a setting: its variable and default."""
    field = SchedulerSettings.model_fields[name]
    return f"{text} (env var {ENV_PREFIX}{name.upper()}; default {field.default})"


@app.command()
def serve(
    api_url: Annotated[
        str | None,
        typer.Option(help=_setting("api_url", "Placement API root URL (None: the catalog's).")),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help=_setting("token", "Static X-Auth-Token (noauth2); None: Keystone credentials.")
        ),
    ] = None,
    auth_config: Annotated[
        Path | None,
        typer.Option(
            help=_setting(
                "auth_config_file",
                "INI file with a Nova-style [placement] section of keystoneauth1 options.",
            )
        ),
    ] = None,
    auth_section: Annotated[
        str | None, typer.Option(help=_setting("auth_section", "Section of --auth-config."))
    ] = None,
    host: Annotated[str | None, typer.Option(help=_setting("host", "Address to listen on."))] = (
        None
    ),
    port: Annotated[int | None, typer.Option(help=_setting("port", "Port to listen on."))] = None,
    config: Annotated[
        Path | None, typer.Option(help=_setting("config_file", "YAML settings file."))
    ] = None,
    log_level: Annotated[
        LogLevel, typer.Option(case_sensitive=False, help="Lowest level logged.")
    ] = LogLevel.INFO,
) -> None:
    """Serve the scheduler API.

    Options override PLACEMENT_SCHEDULER_* variables, which override the YAML
    settings file."""
    import uvicorn

    from scheduler.deciding.pipeline import UnknownPluginError
    from scheduler.plugins.external import PluginLoadError
    from scheduler.serving.collector import tune_collector
    from scheduler.serving.logs import logging_config
    from scheduler.serving.service import create_app

    given: dict[str, Any] = {
        "api_url": api_url,
        "token": token,
        "auth_config_file": auth_config,
        "auth_section": auth_section,
        "host": host,
        "port": port,
        "config_file": config,
    }
    try:
        settings = SchedulerSettings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(
            f"{ENV_PREFIX}{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        errors.print(f"[red]invalid settings:[/red] {problems}", soft_wrap=True)
        raise typer.Exit(2) from None
    try:
        load_adapter(settings.auth_options())  # a wrong set-up stops here, not at start-up
    except SETUP_ERRORS as error:
        errors.print(f"[red]cannot set up Placement credentials:[/red] {escape(str(error))}")
        raise typer.Exit(1) from error
    tune_collector(settings)
    try:
        app = create_app(settings)
    except (UnknownPluginError, PluginLoadError) as error:  # a plugin stops start-up
        errors.print(f"[red]cannot start:[/red] {escape(str(error))}", soft_wrap=True)
        raise typer.Exit(2) from None
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level.value,
        log_config=logging_config(log_level.value),
    )


def _pairs(values: list[str], option: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for value in values:
        for item in placement_form(value).split(","):
            name, sep, amount = item.partition(":")
            if not sep or not amount.strip().isdigit():
                raise typer.BadParameter(
                    f"{option} takes CLASS:N or CLASS=N (comma-separated), not {value!r}"
                )
            found[name.strip().upper()] = int(amount)
    return found


@app.command()
def schedule(
    url: UrlOption = DEFAULT_URL,
    vcpus: Annotated[int, typer.Option(help="VCPU per instance.")] = 0,
    memory_mb: Annotated[int, typer.Option(help="MEMORY_MB per instance.")] = 0,
    disk_gb: Annotated[int, typer.Option(help="DISK_GB per instance.")] = 0,
    resource: Annotated[
        list[str],
        typer.Option(help="More resources: CLASS:N or CLASS=N, comma-separated or repeated."),
    ] = [],  # noqa: B006
    flavor: Annotated[
        str | None,
        typer.Option(help="A flavor of the flavors file; other options add to it or override it."),
    ] = None,
    flavors_file: Annotated[
        Path,
        typer.Option(
            envvar=FLAVORS_FILE_VARIABLE,
            show_envvar=False,
            help=f"YAML file of named flavors (env var {FLAVORS_FILE_VARIABLE}; "
            f"default {DEFAULT_FLAVORS_FILE}).",
        ),
    ] = DEFAULT_FLAVORS_FILE,
    required_trait: Annotated[
        list[str], typer.Option(help="A trait the host must have (repeatable).")
    ] = [],  # noqa: B006
    forbidden_trait: Annotated[
        list[str], typer.Option(help="A trait the host must not have (repeatable).")
    ] = [],  # noqa: B006
    member_of: Annotated[
        list[str], typer.Option(help="Comma-separated aggregate uuids; the host is in one.")
    ] = [],  # noqa: B006
    num_instances: Annotated[int, typer.Option(min=1, help="Instances to place.")] = 1,
    availability_zone: Annotated[
        str | None, typer.Option(help="Only hosts of this availability zone.")
    ] = None,
    group: Annotated[str | None, typer.Option(help="Server group uuid.")] = None,
    group_policy: Annotated[str, typer.Option(help="affinity, anti-affinity, soft-...")] = (
        "anti-affinity"
    ),
    group_name: Annotated[str | None, typer.Option(help="Shown in explanations.")] = None,
    same_host: Annotated[list[str], typer.Option(help="Consumer uuid.")] = [],  # noqa: B006
    different_host: Annotated[list[str], typer.Option(help="Consumer uuid.")] = [],  # noqa: B006
    force_host: Annotated[list[str], typer.Option(help="Only this host name (repeatable).")] = [],  # noqa: B006
    ignore_host: Annotated[list[str], typer.Option(help="Never this host name (repeatable).")] = [],  # noqa: B006
    image_arch: Annotated[str | None, typer.Option(help="Image hw_architecture.")] = None,
    project_id: Annotated[
        str | None, typer.Option(help="Project the allocations belong to.")
    ] = None,
    user_id: Annotated[str | None, typer.Option(help="User the allocations belong to.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw answer.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Decide and explain, but claim nothing.")
    ] = False,
) -> None:
    """Ask the scheduler to place instances; print the decision and its explanation."""
    resources = {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb}
    resources = {name: n for name, n in resources.items() if n} | _pairs(resource, "--resource")
    hints: dict[str, Any] = {
        "same_host": same_host,
        "different_host": different_host,
        "force_hosts": force_host,
        "ignore_hosts": ignore_host,
    }
    if group:
        hints["group"] = {"uuid": group, "policy": group_policy, "name": group_name}
    body: dict[str, Any] = {
        "resources": resources,
        "required_traits": [t.upper() for t in required_trait],
        "forbidden_traits": [t.upper() for t in forbidden_trait],
        "member_of": [[a.strip() for a in entry.split(",")] for entry in member_of],
        "num_instances": num_instances,
        "availability_zone": availability_zone,
        "project_id": project_id,
        "user_id": user_id,
        "hints": hints,
        "dry_run": dry_run,
    }
    if image_arch:
        body["image_properties"] = {"hw_architecture": image_arch}
    request = request_from(ScheduleRequest, body, flavors_file, flavor)
    with reaching(url):
        code = asyncio.run(_schedule(url, request, as_json))
    raise typer.Exit(code)


async def _schedule(url: str, request: ScheduleRequest, as_json: bool) -> int:
    async with SchedulerClient(url) as client:
        try:
            response = await client.schedule(request)
        except NoValidHostError as exc:
            if as_json:
                sys.stdout.write(exc.explanation.model_dump_json(indent=2) + "\n")
            else:
                render_explanation(console, exc.explanation)
            errors.print(f"[red]{exc.detail}[/red]")
            return 1
        except SchedulerServiceError as exc:
            errors.print(f"[red]{exc}[/red]")
            return 2
    if as_json:
        sys.stdout.write(response.model_dump_json(indent=2) + "\n")
    else:
        render_decision(console, response)
    return 0


@app.command()
def release(
    consumers: Annotated[list[uuid.UUID], typer.Argument(help="Consumer uuids.")],
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="PLACEMENT_SCHEDULER_URL",
            show_envvar=False,
            help="URL of `placement-scheduler serve` (env var PLACEMENT_SCHEDULER_URL); "
            "required: releasing deletes allocations.",
        ),
    ] = None,
) -> None:
    """Give back the claims of consumers."""
    if url is None:
        errors.print(
            "[red]release deletes allocations: say which scheduler[/red] with --url or "
            f"PLACEMENT_SCHEDULER_URL; it does not fall back to {DEFAULT_URL}."
        )
        raise typer.Exit(2)
    chosen: str = url

    async def run() -> None:
        async with SchedulerClient(chosen) as client:
            result = await client.release(consumers)
        console.print(f"released: {', '.join(result.released) or '-'}")
        if result.not_found:
            console.print(f"had no allocations: {', '.join(result.not_found)}")

    with reaching(chosen):
        asyncio.run(run())


@app.command()
def plugins(url: UrlOption = DEFAULT_URL, fmt: FormatOption = Format.TABLE) -> None:
    """Show the enabled filters and weighers."""

    async def run() -> None:
        async with SchedulerClient(url) as client:
            filters, weighers = await client.filters(), await client.weighers()
        if fmt is not Format.TABLE:
            rows = [["filter", f.position, f.name, "", f.description] for f in filters.enabled]
            rows += [
                ["weigher", w.position, w.name, f"{w.multiplier:g}", w.description]
                for w in weighers.enabled
            ]
            columns = ["kind", "position", "name", "multiplier", "description"]
            document = {"filters": filters.model_dump(), "weighers": weighers.model_dump()}
            emit(columns, rows, fmt, document=document)
            return
        table = Table(title="Filters (in order)")
        for column in ("#", "name", "description"):
            table.add_column(column)
        for f in filters.enabled:
            table.add_row(str(f.position), f.name, f.description)
        print_table(table, console)
        table = Table(title=f"Weighers (strategy {weighers.strategy})")
        for column in ("name", "multiplier", "description"):
            table.add_column(column)
        for w in weighers.enabled:
            table.add_row(w.name, f"{w.multiplier:g}", w.description)
        print_table(table, console)

    with reaching(url):
        asyncio.run(run())


@app.command()
def openapi(
    output: Annotated[Path | None, typer.Option(help="Write to this file.")] = None,
    check: Annotated[Path | None, typer.Option(help="Fail if this file is out of date.")] = None,
) -> None:
    """Write the scheduler service's OpenAPI document (YAML)."""
    from scheduler.serving.openapi import render_openapi_yaml

    document = render_openapi_yaml()
    if check is not None:
        if not check.exists() or check.read_text() != document:
            errors.print(f"[red]{check} is out of date[/red]")
            raise typer.Exit(1)
        return
    if output is None:
        sys.stdout.write(document)
    else:
        output.write_text(document)


__all__ = ["app", "cli_moves", "main"]  # cli_moves registers move, confirm and revert


def main() -> None:
    known = known_variables(ENV_PREFIX, SchedulerSettings, app, f"{ENV_PREFIX}CONFIG_FILE")
    warn_unknown_variables("placement-scheduler", ENV_PREFIX, known)
    app()
