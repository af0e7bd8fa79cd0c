"""What every command of ``placement-scheduler`` shares: the typer app, the consoles,
the scheduler URL option and the one-line answer when the scheduler is unreachable."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import httpx
import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console

from flavors.files import FlavorsFileError
from scheduler.request.flavors_file import load_flavor
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


Request = TypeVar("Request", bound=BaseModel)


def request_from(
    model: type[Request], body: dict[str, Any], flavors_file: Path, flavor: str | None
) -> Request:
    """The request the options describe (``--flavor`` read from the flavors
    file), or a usage error naming what is wrong with them."""
    if flavor is not None:
        try:
            body["flavor"] = load_flavor(flavors_file, flavor).model_dump()
        except FlavorsFileError as exc:
            raise typer.BadParameter(str(exc), param_hint="--flavor") from None
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise typer.BadParameter(_problems(exc)) from None


def _problems(error: ValidationError) -> str:
    """The request's problems in a line, as the options that cause them say them."""
    said = []
    for problem in error.errors():
        message = str(problem["msg"]).removeprefix("Value error, ")
        where = ".".join(map(str, problem["loc"]))
        said.append(f"{where}: {message}" if where else message)
    text = "; ".join(said)
    if "no resources" in text:
        text += " (give --vcpus, --memory-mb, --disk-gb, --resource CLASS:N or --flavor NAME)"
    return text
