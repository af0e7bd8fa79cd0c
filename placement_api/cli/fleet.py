"""nova-manage's everyday tasks: ``host disable|enable``, ``tree`` and ``usage``,
read from and written to the database the service uses."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from placement_api.cli.settings import command_settings
from placement_api.errors import PlacementError
from placement_api.operator import database
from placement_api.operator.hosts import ConflictsPersisted, HostNotFound, set_disabled
from placement_api.operator.project_usage import read_usage
from placement_api.operator.tree import ProviderNode, read_trees
from placement_client.output import Format, FormatOption, emit

host_app = typer.Typer(
    help="Take a compute host out of scheduling, or put it back.", no_args_is_help=True
)
err = Console(stderr=True, soft_wrap=True)

HostArgument = Annotated[str, typer.Argument(help="The host's root provider: its name or uuid.")]


def register(app: typer.Typer) -> None:
    app.add_typer(host_app, name="host")
    app.command("tree")(tree)
    app.command("usage")(usage)


@contextmanager
def _failures(url: str) -> Iterator[None]:
    """One line and exit 2 for what the operator can fix: a wrong name, a database
    that does not answer, writes that kept racing."""
    try:
        database.require_existing(url)
        yield
    except (HostNotFound, ConflictsPersisted, database.DatabaseUnavailable) as error:
        err.print(f"[red]error:[/red] {escape(str(error))}")
        raise typer.Exit(code=2) from None
    except PlacementError as error:
        err.print(f"[red]error:[/red] {escape(error.detail)}")
        raise typer.Exit(code=2) from None
    except database.CONNECTION_ERRORS as error:
        err.print(f"[red]error:[/red] {escape(str(database.unavailable(url, error)))}")
        raise typer.Exit(code=2) from None


@host_app.command("disable")
def host_disable(
    host: HostArgument,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why: kept in the change feed's entry.")
    ] = None,
) -> None:
    """Add COMPUTE_STATUS_DISABLED to the host's root provider: schedulers skip it.

    Its other traits are kept; a concurrent write is retried, never overwritten."""
    _set(host, disabled=True, reason=reason)


@host_app.command("enable")
def host_enable(host: HostArgument) -> None:
    """Take COMPUTE_STATUS_DISABLED away: the host is scheduled to again."""
    _set(host, disabled=False, reason=None)


def _set(host: str, *, disabled: bool, reason: str | None) -> None:
    url = command_settings().database_url
    with _failures(url):
        change = asyncio.run(set_disabled(url, host, disabled=disabled, reason=reason))
    state = "disabled" if disabled else "enabled"
    verb = f"is now {state}" if change.changed else f"was already {state}"
    because = f" ({change.reason})" if change.changed and change.reason else ""
    typer.echo(f"{change.name} ({change.uuid}) {verb}{because}")


def tree(
    host: Annotated[
        str | None, typer.Argument(help="One host's tree (name or uuid); all when left out.")
    ] = None,
    fmt: FormatOption = Format.TABLE,
) -> None:
    """Providers as trees: capacity and usage per class, traits, disabled hosts."""
    url = command_settings().database_url
    with _failures(url):
        roots = asyncio.run(read_trees(url, host))
    if fmt is Format.TABLE:
        out = Console(soft_wrap=True)
        for root in roots:
            out.print(_rich_tree(root))
        return
    rows = [
        [node.uuid, node.name, node.parent_uuid, depth, _resources(node), node.traits]
        for node, depth in _walk(roots)
    ]
    columns = ["uuid", "name", "parent_uuid", "depth", "resources", "traits"]
    emit(columns, rows, fmt, document=[asdict(root) for root in roots])


def _walk(nodes: list[ProviderNode], depth: int = 0) -> Iterator[tuple[ProviderNode, int]]:
    for node in nodes:
        yield node, depth
        yield from _walk(node.children, depth + 1)


def _resources(node: ProviderNode) -> str:
    return " ".join(f"{rc}={f.used}/{f.capacity}" for rc, f in node.resources.items())


def _rich_tree(root: ProviderNode) -> Tree:
    shown = Tree(_label(root))
    for child in root.children:
        shown.add(_rich_tree(child))
    return shown


def _label(node: ProviderNode) -> str:
    status = " [red]disabled[/red]" if node.disabled else ""
    lines = [f"[bold]{escape(node.name)}[/bold] {node.uuid}{status}"]
    if node.resources:
        lines.append(f"used/capacity: {_resources(node)}")
    others = [trait for trait in node.traits if not trait.startswith("HW_CPU_X86_")]
    if others:
        lines.append(f"traits: {escape(', '.join(others))}")
    return "\n".join(lines)


def usage(
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project (its id).")
    ] = None,
    fmt: FormatOption = Format.TABLE,
) -> None:
    """What each project holds across the cloud: amounts per class and consumers."""
    url = command_settings().database_url
    with _failures(url):
        found = asyncio.run(read_usage(url, project))
    rows = [[u.project_id, u.resource_class, u.used, u.consumers] for u in found]
    emit(["project", "resource_class", "used", "consumers"], rows, fmt, title="Usage by project")
