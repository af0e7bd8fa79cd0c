"""Usage figures per class: of a host's tree, of a set of hosts, of the cloud (pure).

For each inventory row ``capacity = (total - reserved) * allocation_ratio``
(floored, as responses show it) and ``free = capacity - used``, negative
when the provider is over capacity. Several rows of one class (a tree's
NUMA cells, the hosts of a zone) are summed; the allocation ratio of such a
sum is the rows' ratio weighted by ``total - reserved``. The overcommitted
share of a class is the part of its usage beyond ``total - reserved``
(usage that exists only through an allocation ratio above 1), over its
usage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class ClassFigures:
    total: int = 0
    reserved: int = 0
    capacity: int = 0
    used: int = 0
    # Sum of (total - reserved) * allocation_ratio: weighs the ratio of a sum.
    ratio_weight: float = 0.0
    # The largest ratio: the sum's ratio when nothing is left after reserved.
    ratio_fallback: float = 0.0
    # Sum over rows of max(0, used - (total - reserved)).
    overcommitted: int = 0

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ClassFigures:
        """From a row of the snapshot's figure statement, after its owner and class."""
        return cls(*row[2:])

    def merge(self, other: ClassFigures) -> None:
        self.total += other.total
        self.reserved += other.reserved
        self.capacity += other.capacity
        self.used += other.used
        self.ratio_weight += other.ratio_weight
        self.ratio_fallback = max(self.ratio_fallback, other.ratio_fallback)
        self.overcommitted += other.overcommitted

    @property
    def free(self) -> int:
        return self.capacity - self.used

    @property
    def allocation_ratio(self) -> float:
        physical = self.total - self.reserved
        return self.ratio_weight / physical if physical > 0 else self.ratio_fallback

    @property
    def overcommitted_share(self) -> float:
        return round(self.overcommitted / self.used, 6) if self.used > 0 else 0.0

    def host_view(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "reserved": self.reserved,
            "allocation_ratio": self.allocation_ratio,
            "capacity": self.capacity,
            "used": self.used,
            "free": self.free,
        }

    def summary_view(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "reserved": self.reserved,
            "capacity": self.capacity,
            "used": self.used,
            "free": self.free,
            "overcommitted_share": self.overcommitted_share,
        }


# Per class name.
Figures = dict[str, ClassFigures]


def summed(parts: Iterable[Figures]) -> Figures:
    found: Figures = {}
    for part in parts:
        for name, figures in part.items():
            total = found.get(name)
            if total is None:
                total = found[name] = ClassFigures()
            total.merge(figures)
    return found


def summary_view(figures: Figures) -> dict[str, dict[str, Any]]:
    return {name: figures[name].summary_view() for name in sorted(figures)}


def host_view(figures: Figures) -> dict[str, dict[str, Any]]:
    return {name: figures[name].host_view() for name in sorted(figures)}
