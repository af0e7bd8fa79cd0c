"""Everything a capacity report reads, in a few bulk statements (no per-host query).

Providers (with their root, and names only for roots and sharing providers:
the others are never shown), every inventory row (capacity computed in SQL
as responses show it), aggregate memberships and the holders of the traits
a report asks about. A snapshot is read in one transaction, so its figures
agree with each other. Rows stay the driver's records (tuples): tens of
thousands of them are read per report, and every sum is worked out from
them in one pass rather than by further statements.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, distinct, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.driver import fetch_all, in_bound_list
from placement_api.db.models import (
    Aggregate,
    Allocation,
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
)
from placement_api.domain.candidates.provider_filters import sharing_ids
from placement_api.domain.candidates.queries import root_id
from placement_api.domain.capacity import LIMIT_COLUMNS, shown_capacity

# An inventory row: provider, class, then LIMIT_COLUMNS (total, reserved,
# min_unit, max_unit, step_size, allocation_ratio), capacity as shown, used.
InventoryRow = Sequence[Any]
PROVIDER, CLASS, TOTAL, RESERVED, MIN_UNIT, MAX_UNIT, STEP_SIZE, RATIO, CAPACITY, USED = range(10)
Units = tuple[int, int, int]


@dataclass
class Snapshot:
    # Every provider -> its root (itself for a root).
    roots: dict[int, int]
    # Roots and sharing providers -> (uuid, name).
    named: dict[int, tuple[str, str]]
    rows: Sequence[InventoryRow]
    class_names: dict[int, str]
    # Per provider, the aggregate ids it is a member of (absent: none).
    aggregates_of: dict[int, frozenset[int]]
    aggregate_uuids: dict[int, str]
    # Per provider, which of the traits asked about it holds (absent: none).
    traits_of: dict[int, frozenset[int]]
    sharing: frozenset[int]


def _grouped(rows: Iterable[Sequence[int]]) -> dict[int, frozenset[int]]:
    # Most owners have one member: those share one frozenset per member.
    alone: dict[int, frozenset[int]] = {}
    found: dict[int, frozenset[int]] = {}
    for owner, member in rows:
        single = alone.get(member)
        if single is None:
            single = alone[member] = frozenset((member,))
        known = found.get(owner)
        found[owner] = single if known is None else known | single
    return found


async def read_snapshot(session: AsyncSession, trait_ids: Iterable[int] = ()) -> Snapshot:
    """Every provider with its inventory and aggregates; traits only those of ``trait_ids``."""
    dialect = session.get_bind().dialect.name
    is_root = root_id() == ResourceProvider.id
    provider_rows = await fetch_all(
        session,
        select(
            ResourceProvider.id,
            root_id(),
            case((is_root, ResourceProvider.uuid)),
            case((is_root, ResourceProvider.name)),
        ),
    )
    sharing_rows = await fetch_all(
        session,
        select(ResourceProvider.id, ResourceProvider.uuid, ResourceProvider.name).where(
            ResourceProvider.id.in_(sharing_ids())
        ),
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
    class_rows = await fetch_all(session, select(ResourceClass.id, ResourceClass.name))
    member_rows = await fetch_all(
        session, select(ProviderAggregate.resource_provider_id, ProviderAggregate.aggregate_id)
    )
    aggregate_rows = await fetch_all(
        session,
        select(Aggregate.id, Aggregate.uuid).where(
            Aggregate.id.in_(select(ProviderAggregate.aggregate_id))
        ),
    )
    wanted = sorted(set(trait_ids))
    trait_rows: Sequence[Sequence[int]] = []
    if wanted:
        statement = select(ProviderTrait.resource_provider_id, ProviderTrait.trait_id).where(
            in_bound_list(ProviderTrait.trait_id, "trait_ids", dialect)
        )
        trait_rows = await fetch_all(session, statement, {"trait_ids": wanted})
    return Snapshot(
        roots={row[0]: row[1] for row in provider_rows},
        named={
            **{row[0]: (row[2], row[3]) for row in provider_rows if row[2] is not None},
            **{row[0]: (row[1], row[2]) for row in sharing_rows},
        },
        rows=inventory_rows,
        class_names={ident: name for ident, name in class_rows},
        aggregates_of=_grouped(member_rows),
        aggregate_uuids={ident: uuid for ident, uuid in aggregate_rows},
        traits_of=_grouped(trait_rows),
        sharing=frozenset(row[0] for row in sharing_rows),
    )


async def read_consumer_counts(session: AsyncSession) -> dict[int, int]:
    """Per root provider, how many consumers (instances, migrations) hold an
    allocation in its tree; roots without any are absent. One statement::

        SELECT coalesce(rp.root_provider_id, rp.id), count(DISTINCT a.consumer_id)
        FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
        GROUP BY 1
    """
    root = root_id()
    rows = await fetch_all(
        session,
        select(root, func.count(distinct(Allocation.consumer_id)))
        .select_from(Allocation)
        .join(ResourceProvider, ResourceProvider.id == Allocation.resource_provider_id)
        .group_by(root),
    )
    return {row[0]: row[1] for row in rows}
