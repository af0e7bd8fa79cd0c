"""What the provider index (``provider_index``) holds: each provider, its
inventory rows worked out for the capacity test, and the names by id."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from placement_api.domain.candidates.index_tables import NameRows
from placement_api.domain.candidates.summaries import ProviderSummary
from placement_api.domain.capacity import LARGEST_SHOWN_CAPACITY


class Stock(NamedTuple):
    """One inventory row, as the capacity test and the summaries use it."""

    class_id: int
    # The capacity summaries show: (total - reserved) * ratio, truncated, capped.
    capacity: int
    used: int
    # The amounts that fit, units aside: min_unit up to the lesser of
    # max_unit and the room left (``fits_clause``'s test, worked out once).
    least: int
    most: int
    step_size: int


def largest_total(limit: float) -> int:
    """The largest whole ``used + amount`` that the databases' test
    ``used + amount <= limit`` passes: they compare as doubles, so above
    2**53 a total rounds (to even) before it is compared."""
    if limit < 2**53:
        return math.floor(limit)
    # Totals up to the midpoint between ``limit`` and the next double round
    # down to ``limit``; the midpoint itself does when that is even.
    midpoint = (int(limit) + int(math.nextafter(limit, math.inf))) // 2
    return midpoint if float(midpoint) <= limit else midpoint - 1


@dataclass(slots=True)
class IndexedProvider:
    id: int
    uuid: str
    root: int
    parent: int | None
    traits: frozenset[int]
    aggregates: frozenset[int]
    # By class id, in class id order.
    stocks: dict[int, Stock]
    # The newest microversions' summary, built once (``indexed_search``).
    summary: ProviderSummary | None = None


@dataclass
class Names:
    """Ids by name and names by id (aggregates by uuid)."""

    classes: dict[str, int] = field(default_factory=dict)
    class_names: dict[int, str] = field(default_factory=dict)
    traits: dict[str, int] = field(default_factory=dict)
    trait_names: dict[int, str] = field(default_factory=dict)
    aggregates: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: NameRows) -> Names:
        return cls(
            classes={name: ident for ident, name in rows.classes},
            class_names=dict(rows.classes),
            traits={name: ident for ident, name in rows.traits},
            trait_names=dict(rows.traits),
            aggregates={uuid: ident for ident, uuid in rows.aggregates},
        )


def stock_of(row: Any) -> Stock:
    _, class_id, total, reserved, min_unit, max_unit, step, ratio, used = row
    # As the databases compute it, in doubles.
    limit = float(total - reserved) * ratio
    shown = min(math.trunc(limit), LARGEST_SHOWN_CAPACITY)
    most = min(max_unit, largest_total(limit) - used)
    return Stock(class_id, shown, used, min_unit, most, step)
