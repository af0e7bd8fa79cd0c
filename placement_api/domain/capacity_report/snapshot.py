"""Everything a capacity report reads, in a few bulk statements (no per-host query).

Providers, every inventory row (capacity computed in SQL as responses show
it), aggregate memberships, the sharing providers, and the holders of the
traits a report asks about. A snapshot is read in one transaction, so its
figures agree with each other. Inventory rows stay the driver's records
(tuples): tens of thousands of them are read per report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Float, Select, case, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import (
    Aggregate,
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
)
from placement_api.domain.candidates.fetching import fetch_all, in_bound_list
from placement_api.domain.candidates.queries import root_id, sharing_ids
from placement_api.domain.capacity import LIMIT_COLUMNS, shown_capacity

# An inventory row: provider, class, then LIMIT_COLUMNS (total, reserved,
# min_unit, max_unit, step_size, allocation_ratio), capacity as shown, used.
InventoryRow = Sequence[Any]
PROVIDER, CLASS, TOTAL, RESERVED, MIN_UNIT, MAX_UNIT, STEP_SIZE, RATIO, CAPACITY, USED = range(10)
Units = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Provider:
    id: int
    uuid: str
    name: str
    root: int


@dataclass
class Snapshot:
    providers: dict[int, Provider]
    rows: Sequence[InventoryRow]
    # (class, group, sums...) rows of ``_figures_statements``, by their name.
    figure_rows: Mapping[str, Sequence[Sequence[Any]]]
    class_names: dict[int, str]
    # Per provider, the aggregate ids it is a member of (absent: none).
    aggregates_of: dict[int, frozenset[int]]
    aggregate_uuids: dict[int, str]
    # Per provider, which of the traits asked about it holds (absent: none).
    traits_of: dict[int, frozenset[int]]
    sharing: frozenset[int]
    # Root id -> the tree's providers; sharing providers are never part of
    # a host's tree (they are counted once, on their own).
    trees: dict[int, list[int]] = field(default_factory=dict)
    # Root -> the sharing providers serving its tree: those in an aggregate
    # that one of the tree's providers is in.
    shared_with: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Sharing provider -> the roots it serves.
    serves: dict[int, set[int]] = field(default_factory=dict)
    # Class id -> (min_unit, max_unit, step_size) -> (root, provider, free)
    # of hosts' providers: units are checked once per distinct triple.
    host_rows: dict[int, dict[Units, list[tuple[int, int, int]]]] = field(default_factory=dict)
    # Class id -> (provider, units, free) of the sharing providers.
    sharing_rows: dict[int, list[tuple[int, Units, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.providers.values():
            if node.id not in self.sharing:
                self.trees.setdefault(node.root, []).append(node.id)
        providers, sharing = self.providers, self.sharing
        for provider, class_id, _, _, low, high, step, _, capacity, used in self.rows:
            if provider in sharing:
                self.sharing_rows.setdefault(class_id, []).append(
                    (provider, (low, high, step), capacity - used)
                )
                continue
            by_units = self.host_rows.setdefault(class_id, {})
            rows = by_units.get((low, high, step))
            if rows is None:
                rows = by_units[(low, high, step)] = []
            rows.append((providers[provider].root, provider, capacity - used))
        roots_in: dict[int, set[int]] = {}
        for provider_id, aggregates in self.aggregates_of.items():
            if provider_id not in self.sharing:
                for aggregate in aggregates:
                    roots_in.setdefault(aggregate, set()).add(self.providers[provider_id].root)
        reaching: dict[int, set[int]] = {}
        for shared in sorted(self.sharing):
            for aggregate in self.aggregates_of.get(shared, ()):
                for root in roots_in.get(aggregate, ()):
                    reaching.setdefault(root, set()).add(shared)
        self.shared_with = {root: tuple(sorted(found)) for root, found in reaching.items()}
        for root, found in reaching.items():
            for shared in found:
                self.serves.setdefault(shared, set()).add(root)

    @cached_property
    def hosts(self) -> list[int]:
        """Root ids of the hosts (trees that are not a sharing provider), by name."""
        return sorted(self.trees, key=lambda root: self.providers[root].name)


def _figure_sums(dialect: str) -> list[ColumnElement[Any]]:
    """Per group of inventory rows: total, reserved, capacity, used, the sum of
    (total - reserved) * allocation_ratio, the largest ratio, and the usage
    beyond total - reserved summed per row (``ClassFigures``' fields)."""
    physical = Inventory.total - Inventory.reserved
    beyond = Inventory.used - physical
    # SQLite's two-argument max() is PostgreSQL's greatest().
    overcommitted = func.greatest(beyond, 0) if dialect == "postgresql" else func.max(beyond, 0)
    summed = (Inventory.total, Inventory.reserved, shown_capacity(dialect), Inventory.used)
    return [
        *(func.sum(value).cast(BigInteger) for value in summed),
        func.sum(physical * Inventory.allocation_ratio).cast(Float),
        func.max(Inventory.allocation_ratio),
        func.sum(overcommitted).cast(BigInteger),
    ]


def _figures_statements(dialect: str) -> dict[str, Select[*tuple[Any, ...]]]:
    """Rows (group, class, sums) per host tree or sharing provider ("owners"),
    per aggregate of the hosts (by their root's membership), and for all
    hosts together ("hosts", group 0)."""
    sums = _figure_sums(dialect)
    shared = ResourceProvider.id.in_(sharing_ids())
    owner = case((shared, ResourceProvider.id), else_=root_id())
    rows = select(Inventory.resource_class_id).join(
        ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id
    )
    member = ProviderAggregate.aggregate_id
    return {
        "owners": rows.add_columns(owner, *sums).group_by(owner, Inventory.resource_class_id),
        "aggregates": rows.add_columns(member, *sums)
        .join(ProviderAggregate, ProviderAggregate.resource_provider_id == root_id())
        .where(~shared)
        .group_by(member, Inventory.resource_class_id),
        "hosts": rows.add_columns(literal(0), *sums)
        .where(~shared)
        .group_by(Inventory.resource_class_id),
    }


def _grouped(rows: Iterable[tuple[int, int]]) -> dict[int, frozenset[int]]:
    found: dict[int, set[int]] = {}
    for owner, member in rows:
        found.setdefault(owner, set()).add(member)
    return {owner: frozenset(members) for owner, members in found.items()}


async def read_snapshot(session: AsyncSession, trait_ids: Iterable[int] = ()) -> Snapshot:
    """Every provider with its inventory and aggregates; traits only those of ``trait_ids``."""
    dialect = session.get_bind().dialect.name
    provider_rows = await fetch_all(
        session,
        select(ResourceProvider.id, ResourceProvider.uuid, ResourceProvider.name, root_id()),
    )
    inventory_rows = await fetch_all(
        session,
        select(
            Inventory.resource_provider_id,
            Inventory.resource_class_id,
            *LIMIT_COLUMNS,
            shown_capacity(dialect),
            Inventory.used,
        ),
    )
    figure_rows = {
        name: await fetch_all(session, statement)
        for name, statement in _figures_statements(dialect).items()
    }
    class_rows = await fetch_all(session, select(ResourceClass.id, ResourceClass.name))
    member_rows = await fetch_all(
        session,
        select(ProviderAggregate.resource_provider_id, Aggregate.id, Aggregate.uuid).join(
            Aggregate, Aggregate.id == ProviderAggregate.aggregate_id
        ),
    )
    sharing = await fetch_all(session, sharing_ids())
    wanted = sorted(set(trait_ids))
    trait_rows: list[tuple[int, int]] = []
    if wanted:
        statement = select(ProviderTrait.resource_provider_id, ProviderTrait.trait_id).where(
            in_bound_list(ProviderTrait.trait_id, "trait_ids", dialect)
        )
        trait_rows = [(p, t) for p, t in await fetch_all(session, statement, {"trait_ids": wanted})]
    return Snapshot(
        providers={row[0]: Provider(*row) for row in provider_rows},
        rows=inventory_rows,
        figure_rows=figure_rows,
        class_names={ident: name for ident, name in class_rows},
        aggregates_of=_grouped((provider, aggregate) for provider, aggregate, _ in member_rows),
        aggregate_uuids={aggregate: uuid for _, aggregate, uuid in member_rows},
        traits_of=_grouped(trait_rows),
        sharing=frozenset(provider for (provider,) in sharing),
    )
