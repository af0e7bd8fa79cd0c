"""``placement-api db import`` and ``db export``: moving a cloud between
upstream Placement's database and ours."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from placement_api.cli.settings import command_settings
from placement_api.migration.moves import (
    MovePlan,
    plan_export,
    plan_import,
    run_export,
    run_import,
)
from placement_api.migration.problems import MigrationError
from placement_api.migration.progress import Phases, phases
from placement_api.migration.snapshot import OverCapacity

console = Console(stderr=True)
MAX_PROBLEMS_SHOWN = 50

SourceOption = Annotated[
    str,
    typer.Option(
        help="SQLAlchemy URL of the upstream database: postgresql://... or mysql+pymysql://..."
    ),
]
TargetOption = Annotated[
    str,
    typer.Option(
        help="SQLAlchemy URL of an upstream-schema database made by `placement-manage db sync`."
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Report what would be moved and what cannot; write nothing."),
]


def register(db_app: typer.Typer) -> None:
    db_app.command("import")(db_import)
    db_app.command("export")(db_export)


def db_import(source: SourceOption, dry_run: DryRunOption = False) -> None:
    """Copy an upstream Placement database into ours, in one transaction.

    Ours (PLACEMENT_DATABASE_URL) must be migrated and empty."""
    target = command_settings().database_url
    _move(
        lambda bars: plan_import(source, target, bars),
        lambda plan, bars: run_import(plan, target, bars),
        dry_run=dry_run,
    )


def db_export(target: TargetOption, dry_run: DryRunOption = False) -> None:
    """Copy ours into an empty upstream-schema database, in one transaction.

    Ours is PLACEMENT_DATABASE_URL; upstream Placement can then serve the copy again."""
    source = command_settings().database_url
    _move(
        lambda bars: plan_export(source, target, bars),
        lambda plan, bars: run_export(plan, target, bars),
        dry_run=dry_run,
    )


def _move(
    plan_move: Callable[[Phases], MovePlan],
    run_move: Callable[[MovePlan, Phases], None],
    *,
    dry_run: bool,
) -> None:
    started = time.monotonic()
    try:
        with phases(console) as bars:
            plan = plan_move(bars)
        _show_plan(plan)
        if dry_run:
            raise typer.Exit(code=1 if plan.problems or plan.target_refusal else 0)
        with phases(console) as bars:
            run_move(plan, bars)
    except MigrationError as error:
        console.print(f"[red]Nothing was written:[/red] {escape(str(error))}", soft_wrap=True)
        raise typer.Exit(code=1) from error
    console.print(f"[green]Moved and verified[/green] in {time.monotonic() - started:.1f} s.")


def _show_plan(plan: MovePlan) -> None:
    counts = Table("rows", "count", title="To move")
    for name, count in plan.snapshot.counts().items():
        counts.add_row(name, str(count))
    console.print(counts)
    if plan.problems:
        problems = Table("table", "row", "reason", title=f"{len(plan.problems)} rows cannot move")
        for problem in plan.problems[:MAX_PROBLEMS_SHOWN]:
            problems.add_row(problem.table, problem.row, problem.reason)
        console.print(problems)
    _show_over_capacity(plan.snapshot.over_capacity())
    if plan.target_refusal:
        console.print(f"[red]Target refused:[/red] {plan.target_refusal}")


def _show_over_capacity(over: list[OverCapacity]) -> None:
    """Not a problem (upstream and ours serve such inventories), but the operator's to resolve."""
    if not over:
        return
    title = (
        f"{len(over)} inventories over capacity (used beyond (total - reserved) * "
        "allocation_ratio): they move as they are"
    )
    table = Table("provider", "class", "used", "capacity", title=title)
    for row in over[:MAX_PROBLEMS_SHOWN]:
        table.add_row(row.provider_uuid, row.resource_class, str(row.used), f"{row.capacity:g}")
    console.print(table)
