"""``placement-scheduler``: serve the scheduler, or ask it for a decision."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from placement_client.auth import SETUP_ERRORS, load_adapter
from scheduler.render import render_decision, render_explanation
from scheduler.service_client import (
    DEFAULT_URL,
    NoValidHostError,
    SchedulerClient,
    SchedulerServiceError,
)
from scheduler.spec import ScheduleRequest

app = typer.Typer(help="Placement scheduler service.", no_args_is_help=True, add_completion=False)
console = Console()
errors = Console(stderr=True, soft_wrap=True)

UrlOption = Annotated[
    str, typer.Option("--url", envvar="PLACEMENT_SCHEDULER_URL", help="Scheduler service URL.")
]


@app.command()
def serve(
    api_url: Annotated[
        str | None, typer.Option(help="Placement API root URL (default: the Keystone catalog's).")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Static X-Auth-Token (noauth2); unset: Keystone credentials."),
    ] = None,
    auth_config: Annotated[
        Path | None,
        typer.Option(
            help="INI file with a Nova-style [placement] section of keystoneauth1 options."
        ),
    ] = None,
    auth_section: Annotated[
        str | None, typer.Option(help="Section of --auth-config (placement).")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (8779).")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML settings file.")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the scheduler API. Options override PLACEMENT_SCHEDULER_* variables."""
    import uvicorn

    from scheduler.service import create_app
    from scheduler.settings import SchedulerSettings

    given: dict[str, Any] = {
        "api_url": api_url,
        "token": token,
        "auth_config_file": auth_config,
        "auth_section": auth_section,
        "host": host,
        "port": port,
        "config_file": config,
    }
    settings = SchedulerSettings(**{k: v for k, v in given.items() if v is not None})
    try:
        load_adapter(settings.auth_options())  # a wrong set-up stops here, not at start-up
    except SETUP_ERRORS as error:
        errors.print(f"[red]cannot set up Placement credentials:[/red] {escape(str(error))}")
        raise typer.Exit(1) from error
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=log_level)


def _pairs(values: list[str], option: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for value in values:
        name, sep, amount = value.partition("=")
        if not sep or not amount.isdigit():
            raise typer.BadParameter(f"{option} takes CLASS=N, not {value!r}")
        found[name.strip().upper()] = int(amount)
    return found


@app.command()
def schedule(
    url: UrlOption = DEFAULT_URL,
    vcpus: Annotated[int, typer.Option(help="VCPU per instance.")] = 0,
    memory_mb: Annotated[int, typer.Option(help="MEMORY_MB per instance.")] = 0,
    disk_gb: Annotated[int, typer.Option(help="DISK_GB per instance.")] = 0,
    resource: Annotated[list[str], typer.Option(help="More resources, CLASS=N.")] = [],  # noqa: B006
    required_trait: Annotated[list[str], typer.Option()] = [],  # noqa: B006
    forbidden_trait: Annotated[list[str], typer.Option()] = [],  # noqa: B006
    member_of: Annotated[
        list[str], typer.Option(help="Comma-separated aggregate uuids; the host is in one.")
    ] = [],  # noqa: B006
    num_instances: Annotated[int, typer.Option(min=1)] = 1,
    availability_zone: Annotated[str | None, typer.Option()] = None,
    group: Annotated[str | None, typer.Option(help="Server group uuid.")] = None,
    group_policy: Annotated[str, typer.Option(help="affinity, anti-affinity, soft-...")] = (
        "anti-affinity"
    ),
    group_name: Annotated[str | None, typer.Option(help="Shown in explanations.")] = None,
    same_host: Annotated[list[str], typer.Option(help="Consumer uuid.")] = [],  # noqa: B006
    different_host: Annotated[list[str], typer.Option(help="Consumer uuid.")] = [],  # noqa: B006
    force_host: Annotated[list[str], typer.Option()] = [],  # noqa: B006
    ignore_host: Annotated[list[str], typer.Option()] = [],  # noqa: B006
    image_arch: Annotated[str | None, typer.Option(help="Image hw_architecture.")] = None,
    project_id: Annotated[str | None, typer.Option()] = None,
    user_id: Annotated[str | None, typer.Option()] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw answer.")] = False,
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
    }
    if image_arch:
        body["image_properties"] = {"hw_architecture": image_arch}
    try:
        request = ScheduleRequest.model_validate(body)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    raise typer.Exit(asyncio.run(_schedule(url, request, as_json)))


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
    url: UrlOption = DEFAULT_URL,
) -> None:
    """Give back the claims of consumers."""

    async def run() -> None:
        async with SchedulerClient(url) as client:
            result = await client.release(consumers)
        console.print(f"released: {', '.join(result.released) or '-'}")
        if result.not_found:
            console.print(f"had no allocations: {', '.join(result.not_found)}")

    asyncio.run(run())


@app.command()
def plugins(url: UrlOption = DEFAULT_URL) -> None:
    """Show the enabled filters and weighers."""

    async def run() -> None:
        async with SchedulerClient(url) as client:
            filters, weighers = await client.filters(), await client.weighers()
        table = Table(title="Filters (in order)")
        for column in ("#", "name", "description"):
            table.add_column(column)
        for f in filters.enabled:
            table.add_row(str(f.position), f.name, f.description)
        console.print(table)
        table = Table(title=f"Weighers (strategy {weighers.strategy})")
        for column in ("name", "multiplier", "description"):
            table.add_column(column)
        for w in weighers.enabled:
            table.add_row(w.name, f"{w.multiplier:g}", w.description)
        console.print(table)

    asyncio.run(run())


@app.command()
def openapi(
    output: Annotated[Path | None, typer.Option(help="Write to this file.")] = None,
    check: Annotated[Path | None, typer.Option(help="Fail if this file is out of date.")] = None,
) -> None:
    """Write the scheduler service's OpenAPI document (YAML)."""
    from scheduler.openapi import render_openapi_yaml

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


def main() -> None:
    app()
