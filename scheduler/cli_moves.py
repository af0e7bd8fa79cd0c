"""``placement-scheduler move``, ``confirm`` and ``revert``: moving a consumer the way
Nova moves an instance (docs/moves.md)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from scheduler.answers.results import MoveFinished
from scheduler.cli_common import UrlOption, app, console, errors, reaching, request_from
from scheduler.request.flavors_file import DEFAULT_FLAVORS_FILE, FLAVORS_FILE_VARIABLE
from scheduler.request.move import MoveRequest
from scheduler.serving.render import render_explanation
from scheduler.serving.service_client import (
    DEFAULT_URL,
    NoValidHostError,
    SchedulerClient,
    SchedulerServiceError,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print the raw answer.")]


@app.command()
def move(
    consumer: Annotated[str, typer.Argument(help="The consumer (instance) uuid.")],
    kind: Annotated[str, typer.Option(help="migrate, live-migrate, resize or evacuate.")],
    url: UrlOption = DEFAULT_URL,
    flavor: Annotated[str | None, typer.Option(help="A flavor of the flavors file.")] = None,
    flavors_file: Annotated[
        Path,
        typer.Option(envvar=FLAVORS_FILE_VARIABLE, show_envvar=False, help="YAML flavors file."),
    ] = DEFAULT_FLAVORS_FILE,
    vcpus: Annotated[int, typer.Option(help="resize: VCPU.")] = 0,
    memory_mb: Annotated[int, typer.Option(help="resize: MEMORY_MB.")] = 0,
    disk_gb: Annotated[int, typer.Option(help="resize: DISK_GB.")] = 0,
    allow_same_host: Annotated[
        bool, typer.Option("--allow-same-host", help="migrate/resize: the source may be chosen.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Choose and claim a destination; the source allocations go to a migration consumer."""
    resources = {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb}
    body: dict[str, Any] = {
        "consumer_uuid": consumer,
        "kind": kind,
        "resources": {name: n for name, n in resources.items() if n},
        "allow_same_host": allow_same_host,
    }
    request = request_from(MoveRequest, body, flavors_file, flavor)
    with reaching(url):
        code = asyncio.run(_move(url, request, as_json))
    raise typer.Exit(code)


async def _move(url: str, request: MoveRequest, as_json: bool) -> int:
    async with SchedulerClient(url) as client:
        try:
            moved = await client.move(request)
        except NoValidHostError as exc:
            render_explanation(console, exc.explanation)
            errors.print(f"[red]{exc.detail}[/red]")
            return 1
        except SchedulerServiceError as exc:
            errors.print(f"[red]{exc}[/red]")
            return 2
    if as_json:
        sys.stdout.write(moved.model_dump_json(indent=2) + "\n")
        return 0
    destination = moved.selection.provider
    console.print(
        f"{request.consumer_uuid} moves to {destination.name} ({destination.uuid}); "
        f"migration {moved.migration_uuid} holds the source. Confirm or revert it."
    )
    render_explanation(console, moved.explanation)
    return 0


def _finish(consumer: str, action: Literal["confirm", "revert"], url: str, as_json: bool) -> None:
    async def run() -> MoveFinished:
        async with SchedulerClient(url) as client:
            return await client.finish_move(consumer, action)

    with reaching(url):
        try:
            done = asyncio.run(run())
        except SchedulerServiceError as exc:
            errors.print(f"[red]{exc}[/red]")
            raise typer.Exit(1) from None
    if as_json:
        sys.stdout.write(done.model_dump_json(indent=2) + "\n")
        return
    where = ", ".join(sorted(done.allocations)) or "nothing"
    console.print(f"{consumer}: {done.outcome}; it holds allocations on {where}")


@app.command()
def confirm(
    consumer: Annotated[str, typer.Argument(help="The consumer (instance) uuid.")],
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Finish a move: drop the source allocations."""
    _finish(consumer, "confirm", url, as_json)


@app.command()
def revert(
    consumer: Annotated[str, typer.Argument(help="The consumer (instance) uuid.")],
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Undo a move: the consumer gets its source allocations back."""
    _finish(consumer, "revert", url, as_json)
