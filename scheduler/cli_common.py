"""What every command of ``placement-scheduler`` shares: the typer app, the consoles,
the scheduler URL option and the one-line answer when the scheduler is unreachable."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import httpx
import typer
from rich.console import Console

from scheduler.serving.service_client import DEFAULT_URL

app = typer.Typer(help="Placement scheduler service.", no_args_is_help=True, add_completion=False)
console = Console()
errors = Console(stderr=True, soft_wrap=True)

UrlOption = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="PLACEMENT_SCHEDULER_URL",
        help=f"URL of `placement-scheduler serve` (env var PLACEMENT_SCHEDULER_URL; "
        f"default {DEFAULT_URL}).",
        show_envvar=False,
    ),
]


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """A scheduler that cannot be reached is one line, not a traceback."""
    try:
        yield
    except httpx.TransportError as exc:
        errors.print(
            f"[red]cannot reach the scheduler at {url}[/red]: {type(exc).__name__}: {exc}. "
            "Is `placement-scheduler serve` running there? Point --url (or "
            "PLACEMENT_SCHEDULER_URL) at it.",
            soft_wrap=True,
        )
        raise typer.Exit(2) from None
