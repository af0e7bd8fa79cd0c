"""How listing commands print: ``-f table|json|csv|value``, as the ``openstack`` CLI.

A table is never cut to the terminal's 80 columns: piped or redirected, it is as
wide as its contents; on a terminal, a long cell folds onto the next line rather
than ending in an ellipsis.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

# Wider than any table: how wide one is when nothing limits it.
_UNBOUNDED = 1_000_000


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"
    VALUE = "value"


FormatOption = Annotated[
    Format,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="table, json, csv or value (the values alone, space-separated, one row a line).",
    ),
]


def chosen(fmt: Format, as_json: bool) -> Format:
    """``--json``, kept where a command had it, is ``-f json``."""
    return Format.JSON if as_json else fmt


def print_table(table: Table, console: Console | None = None) -> None:
    console = console or Console()
    for column in table.columns:
        column.overflow = "fold"
    if not console.is_terminal:
        unbounded = console.options.update_width(_UNBOUNDED)
        natural = console.measure(table, options=unbounded).maximum
        console = Console(file=console.file, width=max(natural, console.width))
    console.print(table)


def emit(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: Format,
    *,
    title: str | None = None,
    document: Any = None,
) -> None:
    """Print ``rows`` under ``columns``; ``document`` is the JSON form when it is
    richer than a list of one object per row."""
    if fmt is Format.JSON:
        if document is None:
            document = [dict(zip(columns, row, strict=True)) for row in rows]
        typer.echo(json.dumps(document, indent=2, default=str))
    elif fmt is Format.CSV:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_plain(cell) for cell in row] for row in rows])
    elif fmt is Format.VALUE:
        for row in rows:
            typer.echo(" ".join(_plain(cell) for cell in row))
    else:
        table = Table(*columns, title=title)
        for row in rows:
            table.add_row(*(escape(_plain(cell)) for cell in row))
        print_table(table)


def _plain(cell: Any) -> str:
    if cell is None:
        return ""
    if isinstance(cell, list | tuple | set | frozenset):
        return ",".join(str(item) for item in cell)
    return str(cell)
