"""``--version`` for the three programs (``placement-api``, ``placement-agent``,
``placement-scheduler``), which ship in one distribution and share its version."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Annotated

import typer

DISTRIBUTION = "placement-api"


def _show(ctx: typer.Context, wanted: bool) -> None:
    if wanted:
        program = Path(ctx.find_root().info_name or DISTRIBUTION).name
        typer.echo(f"{program} {metadata.version(DISTRIBUTION)}")
        raise typer.Exit()


VersionOption = Annotated[
    bool,
    typer.Option("--version", callback=_show, is_eager=True, help="Print the version and exit."),
]
