"""The windowing policy of a search with a limit, pure: whether trees or
providers are few enough to take whole, how many root ids each window takes
(sized from the yield so far), and when summaries are worth reading ahead."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """Where a windowed search stands: root ids passed (of a range, or of a
    list), candidates found, and how many root ids the next window takes."""

    wanted: int
    size: int
    scanned: int = 0
    found: int = 0

    @property
    def complete(self) -> bool:
        return self.found >= self.wanted

    @property
    def still_wanted(self) -> int:
        return self.wanted - self.found

    @property
    def read_ahead(self) -> bool:
        """After windows without a candidate (a full cloud, a rare flavor),
        summaries read ahead would most likely go unused."""
        return self.scanned == 0 or self.found > 0


@dataclass(frozen=True)
class WindowPolicy:
    # The first window takes this many root ids per candidate wanted (at least
    # ``min_window``); trees that cannot serve the request make later ones needed.
    per_candidate: float = 1.25
    min_window: int = 256
    # At most this many trees or providers per candidate wanted are few: one
    # read of them all beats a series of windows.
    few_per_candidate: int = 4
    # Windows sized from a yield take at most this many root ids: each is
    # read provider by provider (``queries.FENCED_WINDOW``), so its cost
    # follows its size, never the cloud's.
    max_window: int = 4096

    def is_few(self, count: int, wanted: int) -> bool:
        return count <= self.few_per_candidate * wanted

    def start(self, wanted: int) -> Progress:
        size = max(int(self.per_candidate * wanted), self.min_window)
        return Progress(wanted, min(size, self.max_window))

    def after(self, progress: Progress, found: int) -> Progress:
        """The progress once the next window has yielded ``found`` candidates."""
        scanned, found = progress.scanned + progress.size, progress.found + found
        return Progress(
            progress.wanted, self._size(scanned, found, progress.wanted), scanned, found
        )

    def _size(self, scanned: int, found: int, wanted: int) -> int:
        """Enough root ids, at the rate seen, for the candidates still wanted.
        After windows without a candidate, the rest at once: one read of
        many trees costs less than a series of windows."""
        if found == 0:
            return sys.maxsize
        per_root_id = found / scanned
        size = max(int(self.per_candidate * (wanted - found) / per_root_id), self.min_window)
        return min(size, self.max_window)


POLICY = WindowPolicy()
