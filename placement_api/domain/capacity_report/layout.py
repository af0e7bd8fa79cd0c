"""A snapshot laid out for counting and summing (pure, no I/O).

Hosts (trees that are not a sharing provider) get a position in name
order, the order instances are placed in. Per class, the rows of the
hosts' providers are columns aligned with those positions: the first
column holds each tree's first row of the class, the second its second
(a second NUMA cell), and so on. Counting a flavor is then a few list
comprehensions per column rather than dictionary work per row. Rows of
sharing providers are kept apart: they are counted once, on their own.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from placement_api.domain.capacity_report.snapshot import (
    CAPACITY,
    CLASS,
    MAX_UNIT,
    MIN_UNIT,
    PROVIDER,
    STEP_SIZE,
    USED,
    InventoryRow,
    Snapshot,
    Units,
)

# Columns kept per class at most: a tree with more rows of one class (a
# host with many devices) has the rest in the class's ``spill``, so memory
# stays one list per column and host.
DENSE_COLUMNS = 4
# A column this sparse (a class few hosts have, or only sharing providers)
# is cheaper as spilled rows.
SPARSE_SHARE = 8
# The free capacity of an absent row: no amount (at least 1) fits it.
MISSING = -1
_units: Callable[[InventoryRow], Units] = operator.itemgetter(MIN_UNIT, MAX_UNIT, STEP_SIZE)


@dataclass(slots=True)
class Column:
    """One row of a class per host position (None: the tree has no such row)."""

    rows: list[InventoryRow | None]
    free: list[int]
    providers: list[int]
    # Index into the class's ``units`` per position, when it has several.
    units: list[int] | None

    @classmethod
    def of(cls, rows: list[InventoryRow | None], units: dict[Units, int]) -> Column:
        return cls(
            rows,
            [r[CAPACITY] - r[USED] if r is not None else MISSING for r in rows],
            [r[PROVIDER] if r is not None else MISSING for r in rows],
            [units[_units(r)] if r is not None else 0 for r in rows] if len(units) > 1 else None,
        )


@dataclass
class ClassLayout:
    columns: list[Column] = field(default_factory=list)
    # Rows beyond the columns: (host position, row).
    spill: list[tuple[int, InventoryRow]] = field(default_factory=list)
    # The distinct (min_unit, max_unit, step_size) of the hosts' rows.
    units: dict[Units, int] = field(default_factory=dict)
    # Sharing providers' rows.
    sharing: list[InventoryRow] = field(default_factory=list)


class Layout:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        sharing, roots, named = snapshot.sharing, snapshot.roots, snapshot.named
        tree_roots = {root for provider, root in roots.items() if provider not in sharing}
        self.hosts: list[int] = sorted(tree_roots, key=lambda root: named[root][1])
        self.classes: dict[int, ClassLayout] = {}
        self._lay_out(snapshot)
        self._reach(snapshot)

    def _lay_out(self, snapshot: Snapshot) -> None:
        hosts = len(self.hosts)
        sharing, roots = snapshot.sharing, snapshot.roots
        position = {root: index for index, root in enumerate(self.hosts)}
        # Per class: its columns' rows, and its spilled and sharing rows.
        grids: dict[int, tuple[list[list[InventoryRow | None]], ClassLayout]] = {}
        for row in snapshot.rows:
            grid = grids.get(row[CLASS])
            if grid is None:
                grid = grids[row[CLASS]] = ([[None] * hosts], ClassLayout())
            provider = row[PROVIDER]
            if provider in sharing:
                grid[1].sharing.append(row)
                continue
            index = position[roots[provider]]
            columns = grid[0]
            if columns[0][index] is None:
                columns[0][index] = row
                continue
            for rows in columns[1:]:
                if rows[index] is None:
                    rows[index] = row
                    break
            else:
                if len(columns) < DENSE_COLUMNS:
                    columns.append([None] * hosts)
                    columns[-1][index] = row
                else:
                    grid[1].spill.append((index, row))
        for class_id, (columns, layout) in grids.items():
            dense = []
            for rows in columns:
                if (hosts - rows.count(None)) * SPARSE_SHARE >= hosts:
                    dense.append(rows)
                else:
                    layout.spill.extend((i, r) for i, r in enumerate(rows) if r is not None)
            found: set[Units] = set()
            for rows in dense:
                found.update(map(_units, filter(None, rows)))
            found.update(_units(r) for _, r in layout.spill)
            layout.units = {units: index for index, units in enumerate(sorted(found))}
            layout.columns = [Column.of(rows, layout.units) for rows in dense]
            self.classes[class_id] = layout

    def _reach(self, snapshot: Snapshot) -> None:
        """Which sharing providers each host reaches: those in an aggregate
        that one of the tree's providers is in."""
        sharing, roots = snapshot.sharing, snapshot.roots
        shared_in: dict[int, set[int]] = {}
        for shared in sharing:
            for aggregate in snapshot.aggregates_of.get(shared, ()):
                shared_in.setdefault(aggregate, set()).add(shared)
        # Per root, the sharing providers it reaches (most roots are the only
        # member of their tree, and many are in the same aggregates).
        reaching: dict[int, frozenset[int]] = {}
        through: dict[frozenset[int], frozenset[int]] = {}
        if shared_in:
            for provider, aggregates in snapshot.aggregates_of.items():
                if provider in sharing:
                    continue
                found = through.get(aggregates)
                if found is None:
                    found = through[aggregates] = frozenset().union(
                        *(shared_in.get(a, ()) for a in aggregates)
                    )
                if found:
                    root = roots[provider]
                    reaching[root] = reaching.get(root, frozenset()) | found
        # Hosts reaching the same sharing providers share a signature (its
        # providers in id order); signature 0 reaches none.
        self.signatures: list[tuple[int, ...]] = [()]
        self.signature_of = [0] * len(self.hosts)
        self.signature_hosts: list[list[int]] = [[]]
        # Sharing provider -> how many hosts reach it.
        self.served_count: dict[int, int] = {}
        index_of: dict[frozenset[int], int] = {frozenset(): 0}
        if not reaching:
            self.signature_hosts[0] = list(range(len(self.hosts)))
            return
        for position, root in enumerate(self.hosts):
            reached = reaching.get(root, frozenset())
            index = index_of.get(reached)
            if index is None:
                index = index_of[reached] = len(self.signatures)
                self.signatures.append(tuple(sorted(reached)))
                self.signature_hosts.append([])
            self.signature_of[position] = index
            self.signature_hosts[index].append(position)
        for providers, positions in zip(self.signatures, self.signature_hosts, strict=True):
            for shared in providers:
                self.served_count[shared] = self.served_count.get(shared, 0) + len(positions)

    def served(self, shared: int) -> list[int]:
        """Positions of the hosts reaching this sharing provider."""
        return [
            position
            for signature, reached in enumerate(self.signatures)
            if shared in reached
            for position in self.signature_hosts[signature]
        ]
