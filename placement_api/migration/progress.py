"""Progress of a move on the terminal: one bar per phase, advanced per batch."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

Advance = Callable[[int], None]


class Phases:
    """Bars for the phases of a move, shown on ``console`` while it is open."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def start(self, description: str, total: int) -> Advance:
        task = self._progress.add_task(description, total=max(total, 1))
        if total == 0:
            self._progress.advance(task, 1)

        def advance(rows: int) -> None:
            self._progress.advance(task, rows)

        return advance


@contextmanager
def phases(console: Console) -> Iterator[Phases]:
    columns = (
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        yield Phases(progress)
