"""Usage figures per class: of a host's tree, of a set of hosts, of the cloud (pure).

For each inventory row ``capacity = (total - reserved) * allocation_ratio``
(floored, as responses show it) and ``free = capacity - used``, negative
when the provider is over capacity. Several rows of one class (a tree's
NUMA cells, the hosts of a zone) are summed; the allocation ratio of such a
sum is the rows' ratio weighted by ``total - reserved``. The overcommitted
share of a class is the part of its usage beyond ``total - reserved``
(usage that exists only through an allocation ratio above 1), over its
usage.

Sums are taken over the layout's columns: per class, one list per figure
with each host's tree summed, then per set of hosts over its positions.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from placement_api.domain.capacity_report.layout import ClassLayout, Layout
from placement_api.domain.capacity_report.snapshot import (
    CAPACITY,
    PROVIDER,
    RATIO,
    RESERVED,
    TOTAL,
    USED,
    InventoryRow,
)

# Per host position: rows, total, reserved, capacity, used, the sum of
# (total - reserved) * allocation_ratio, the largest ratio, and the sum of
# max(0, used - (total - reserved)) over the rows.
_FIELDS = 8
ROWS, SUM_TOTAL, SUM_RESERVED, SUM_CAPACITY, SUM_USED, WEIGHT, FALLBACK, OVERCOMMITTED = range(
    _FIELDS
)
# Per class name, its figures summed.
Sums = dict[str, list[Any]]
_MERGE: tuple[Callable[[Any, Any], Any], ...] = (*(operator.add,) * 6, max, operator.add)


# Where a host has no row of a column: it adds nothing to any figure.
_NO_ROW: InventoryRow = (0, 0, 0, 0, 0, 0, 0, 0.0, 0, 0)


def _column_figures(rows: Sequence[InventoryRow | None]) -> list[list[Any]]:
    """Per figure, each position's row."""
    complete = None not in rows
    filled = (
        cast("Sequence[InventoryRow]", rows)
        if complete
        else [r if r is not None else _NO_ROW for r in rows]
    )
    physical = [r[TOTAL] - r[RESERVED] for r in filled]
    return [
        [1] * len(rows) if complete else [0 if r is None else 1 for r in rows],
        [r[TOTAL] for r in filled],
        [r[RESERVED] for r in filled],
        [r[CAPACITY] for r in filled],
        [r[USED] for r in filled],
        [p * r[RATIO] for p, r in zip(physical, filled, strict=True)],
        [r[RATIO] for r in filled],
        [u - p if (u := r[USED]) > p else 0 for p, r in zip(physical, filled, strict=True)],
    ]


def _per_host(layout: ClassLayout, hosts: int) -> list[list[Any]]:
    """Per figure, each host's tree summed over its rows of the class."""
    figures: list[list[Any]] | None = None
    for column in layout.columns:
        more = _column_figures(column.rows)
        figures = (
            more
            if figures is None
            else [list(map(m, a, b)) for m, a, b in zip(_MERGE, figures, more, strict=True)]
        )
    if figures is None:
        figures = [[values[0]] * hosts for values in _column_figures([None])]
    for position, row in layout.spill:
        for index, value in enumerate(_column_figures([row])):
            figures[index][position] = _MERGE[index](figures[index][position], value[0])
    return figures


def host_view(sums: Sequence[Any]) -> dict[str, Any]:
    """One provider's figures of a class (a sharing provider's row): ``_views``'s formula."""
    (view,) = _views([[value] for value in sums])
    assert view is not None, "a provider's own row"
    return view


def _views(figures: Sequence[Sequence[Any]]) -> list[dict[str, Any] | None]:
    """Each position's figures of a class (None where it has no row), taken down the
    figures' columns: one loop for 10,000 hosts, no call per host."""
    return [
        {
            "total": t,
            "reserved": r,
            "allocation_ratio": w / (t - r) if t > r else fallback,
            "capacity": c,
            "used": u,
            "free": c - u,
        }
        if n
        else None
        for n, t, r, c, u, w, fallback in zip(*figures[:OVERCOMMITTED], strict=True)
    ]


def summary_view(sums: Sequence[Any]) -> dict[str, Any]:
    used = sums[SUM_USED]
    return {
        "total": sums[SUM_TOTAL],
        "reserved": sums[SUM_RESERVED],
        "capacity": sums[SUM_CAPACITY],
        "used": used,
        "free": sums[SUM_CAPACITY] - used,
        "overcommitted_share": round(sums[OVERCOMMITTED] / used, 6) if used > 0 else 0.0,
    }


class CloudFigures:
    """Per class name, its figures per host, per set of hosts and per sharing provider."""

    def __init__(self, layout: Layout) -> None:
        self._hosts = len(layout.hosts)
        names = layout.snapshot.class_names
        # Classes only sharing providers have are no host's.
        self._classes: list[tuple[str, list[list[Any]]]] = sorted(
            (names[class_id], _per_host(found, self._hosts))
            for class_id, found in layout.classes.items()
            if found.columns or found.spill
        )
        self._sharing: dict[int, Sums] = {}
        for class_id, found in layout.classes.items():
            for row in found.sharing:
                figures = [values[0] for values in _column_figures([row])]
                self._sharing.setdefault(row[PROVIDER], {})[names[class_id]] = figures

    def host_views(self) -> list[dict[str, dict[str, Any]]]:
        """Per host position, its tree's figures per class (classes it has rows of)."""
        views = [_views(figures) for _, figures in self._classes]
        names = [name for name, _ in self._classes]
        if not views:
            return [{} for _ in range(self._hosts)]
        if len(views) == 1:
            return [{names[0]: view} if view is not None else {} for view in views[0]]
        if not any(None in per_class for per_class in views):  # every host has every class
            return [
                dict(zip(names, per_host, strict=True)) for per_host in zip(*views, strict=True)
            ]
        return [
            {name: view for name, view in zip(names, per_host, strict=True) if view is not None}
            for per_host in zip(*views, strict=True)
        ]

    def sums(self, positions: Sequence[int] | None = None) -> Sums:
        """Per class the hosts have rows of, its figures summed over these
        host positions (None: every host)."""
        found: Sums = {}
        if positions is not None and len(positions) == 1:
            # A host alone (as in an aggregate per host): its own figures.
            (only,) = positions
            for name, figures in self._classes:
                if figures[ROWS][only]:
                    found[name] = [values[only] for values in figures]
            return found
        pick = operator.itemgetter(*positions) if positions else None
        for name, figures in self._classes:
            if positions is None:
                picked: Sequence[Sequence[Any]] = figures
            elif pick is not None:
                picked = [pick(values) for values in figures]
            else:
                picked = [[] for _ in figures]
            if not sum(picked[ROWS]):
                continue
            found[name] = [
                max(values, default=0.0) if index == FALLBACK else sum(values)
                for index, values in enumerate(picked)
            ]
        return found

    def sharing(self, provider: int) -> dict[str, dict[str, Any]]:
        figures = self._sharing.get(provider, {})
        return {name: host_view(figures[name]) for name in sorted(figures)}

    def sharing_sums(self) -> list[Sums]:
        return list(self._sharing.values())


def merged(parts: Iterable[Sums]) -> Sums:
    """Per class, the parts' figures summed."""
    found: Sums = {}
    for part in parts:
        for name, figures in part.items():
            sums = found.get(name)
            if sums is None:
                found[name] = list(figures)
            else:
                found[name] = [m(a, b) for m, a, b in zip(_MERGE, sums, figures, strict=True)]
    return found


def summaries(sums: Sums) -> dict[str, dict[str, Any]]:
    return {name: summary_view(sums[name]) for name in sorted(sums)}
