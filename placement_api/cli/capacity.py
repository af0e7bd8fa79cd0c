"""``placement-api capacity``: options, and the report as a table or JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from placement_api import errors
from placement_api.domain.capacity_report.flavor import Flavor
from placement_api.domain.capacity_report.report import AGGREGATE, HOST, ZONE
from placement_api.operator import database
from placement_api.services.capacity_sources import (
    CapacityFileError,
    flavors_from_file,
    load_zone_map,
)
from placement_api.settings import Settings

out = Console()
err = Console(stderr=True)

FlavorOption = Annotated[
    list[str] | None,
    typer.Option(
        "--flavor",
        "-f",
        help="NAME=RC:N,...[:required=TRAIT,!TRAIT][:member_of=UUID|in:UUID,...], or a "
        "NAME from the flavors file; repeatable. None: every flavor of the flavors file "
        "(PLACEMENT_CAPACITY_FLAVORS_FILE), or the usage figures only.",
    ),
]
ByOption = Annotated[
    str,
    typer.Option(
        "--by",
        help="Break down by availability zone (az), aggregate or host.",
        case_sensitive=False,
    ),
]
IncludeUnavailableOption = Annotated[
    bool,
    typer.Option(
        "--include-unavailable",
        help="Count hosts that are disabled (COMPUTE_STATUS_DISABLED) or down (heartbeats "
        "missed) too; by default they are left out and counted apart.",
    ),
]
# The columns naming a row, then (except per host) its host count.
_HEADS = {
    ZONE: ("Zone", "Hosts"),
    AGGREGATE: ("Aggregate", "Zone", "Hosts"),
    HOST: ("Host", "State", "Zones"),
}
_ROWS = {ZONE: "availability_zones", AGGREGATE: "aggregates", HOST: "hosts"}


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", soft_wrap=True)
    return typer.Exit(code=2)


def _flavors(settings: Settings, options: list[str]) -> list[Flavor]:
    # Imported here, as `audit` is: it loads the database layer and its metrics,
    # which other commands (`db upgrade` before `serve` made the metrics directory) must not.
    from placement_api.operator.capacity import parse_flavor_option

    path = settings.capacity_flavors_file
    try:
        from_file = {f.name: f for f in flavors_from_file(path)} if path else {}
        chosen = [parse_flavor_option(option) for option in options]
    except (CapacityFileError, errors.BadRequest) as exc:
        raise _fail(exc.detail if isinstance(exc, errors.BadRequest) else str(exc)) from None
    if not options:
        return list(from_file.values())
    found = []
    for flavor in chosen:
        if isinstance(flavor, str):
            if flavor not in from_file:
                raise _fail(f"no flavor {flavor!r} in the flavors file ({path or 'none set'})")
            flavor = from_file[flavor]
        found.append(flavor)
    return found


def capacity(
    settings: Settings, *, options: list[str], by: str, as_json: bool, include_unavailable: bool
) -> None:
    if by not in _ROWS:
        raise _fail(f"--by must be one of az, aggregate, host (got {by!r})")
    flavors = _flavors(settings, options)
    try:
        zones = load_zone_map(
            settings.capacity_aggregates_file, settings.capacity_default_availability_zone
        )
    except CapacityFileError as exc:
        raise _fail(str(exc)) from None
    database.require_existing(settings.database_url)
    from placement_api.operator.capacity import run_capacity

    try:
        reports = asyncio.run(
            run_capacity(settings, flavors, zones, by, include=include_unavailable)
        )
    except errors.BadRequest as exc:
        raise _fail(exc.detail) from None
    if as_json:
        documents = [{"flavor": name or None, **report} for name, report in reports.items()]
        typer.echo(json.dumps(documents, indent=2))
        return
    out.print(_table(reports, by))
    note = unavailable_note(reports)
    if note:
        out.print(note, soft_wrap=True)


def unavailable_note(reports: dict[str, dict[str, Any]]) -> str:
    """One line on the hosts disabled or down: whether they are counted, and what
    they would add (left out) or how much of the figures they are (included)."""
    head = next(iter(reports.values()))["unavailable"]
    if not head["hosts"]:
        return ""
    states = f"{head['down']} down, {head['disabled']} disabled"
    more = [f"{report['unavailable']['fits']} {name}" for name, report in reports.items() if name]
    if head["included"]:
        counted = f"; of the fits, {', '.join(more)} are on them" if more else ""
        return f"Counted: {head['hosts']} hosts that are down or disabled ({states}){counted}."
    extra = f"{', '.join(more)} more fit on" if more else "Left out:"
    return (
        f"{extra} {head['hosts']} hosts that are down or disabled ({states}); "
        "--include-unavailable counts them."
    )


def _where(row: dict[str, Any], by: str) -> tuple[str, ...]:
    if by == ZONE:
        return (row["name"], str(row["hosts"]))
    if by == AGGREGATE:
        return (row["name"] or row["uuid"], row["availability_zone"] or "", str(row["hosts"]))
    return (row["name"], host_state(row), ",".join(row["availability_zones"]))


def host_state(host: dict[str, Any]) -> str:
    """``enabled``, or what makes the host unavailable: ``disabled``, ``down`` or both."""
    states = [state for state in ("disabled", "down") if host[state]]
    return ", ".join(states) or "enabled"


def _table(reports: dict[str, dict[str, Any]], by: str) -> Table:
    """One row per zone, aggregate or host: fits per flavor, then free per class."""
    flavors = [name for name in reports if name]
    first = next(iter(reports.values()))
    classes = sorted(first["resource_classes"])
    table = Table(title=f"Capacity by {by}" + (f": {', '.join(flavors)}" if flavors else ""))
    for head in _HEADS[by]:
        table.add_column(head)
    for name in flavors:
        table.add_column(f"{name} fits", justify="right")
    for name in classes:
        table.add_column(f"{name} free", justify="right")
    per_flavor = [reports[name][_ROWS[by]] for name in flavors]
    for index, row in enumerate(first[_ROWS[by]]):
        fits = [str(rows[index]["fits"]) for rows in per_flavor]
        free = [_free(row["resources"].get(name)) for name in classes]
        table.add_row(*_where(row, by), *fits, *free)
    totals = [str(reports[name]["fits"]) for name in flavors]
    cloud = [_free(first["resource_classes"][name]) for name in classes]
    table.add_section()
    table.add_row("all", *[""] * (len(_HEADS[by]) - 1), *totals, *cloud, style="bold")
    return table


def _free(figures: dict[str, Any] | None) -> str:
    if figures is None:
        return ""
    free: int = figures["free"]
    text = f"{free} of {figures['capacity']}"
    return f"[red]{text}[/red]" if free < 0 else text
