"""The statements of an allocation write, built once.

A claim is on the hottest path of the service; building and compiling its
statements cost the API more CPU than running them (profiled: about 40% of
a ``PUT /allocations``), and so did running them through SQLAlchemy. So
each is built here once, on the tables rather than the ORM entities, as a
``Prepared`` statement (``db/prepared.py``): compiled once per dialect and,
on PostgreSQL, sent straight to asyncpg with lists bound as arrays
(``= ANY($1)``), so the driver keeps one prepared statement for every
length. SQLite runs the same statements through SQLAlchemy.

The usage update checks capacity and applies the change in one statement:
the capacity predicate is evaluated on the row as it is once locked, so no
read before it is needed, and a refused slot is simply not returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Integer,
    Select,
    Table,
    bindparam,
    delete,
    insert,
    literal_column,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import Allocation, Inventory, ResourceClass, ResourceProvider
from placement_api.db.prepared import Membership, Prepared
from placement_api.domain.capacity import LIMIT_COLUMNS, InventoryLimits
from placement_api.domain.consumers import owner_lookups

# (provider id, resource class id)
Slot = tuple[int, int]
# (consumer id, provider id, resource class id, amount)
AllocationRow = tuple[int, int, int, int]
_ROW_COLUMNS = ("consumer_id", "resource_provider_id", "resource_class_id", "used")
_ROW_ARRAYS = ("row_consumers", "row_providers", "row_classes", "row_used")

_allocations = cast(Table, Allocation.__table__)
_providers = cast(Table, ResourceProvider.__table__)
_classes = cast(Table, ResourceClass.__table__)
_inventories = cast(Table, Inventory.__table__)

# (kind, name, id): the classes and providers a write names, and the
# consumers' owners (``consumers.owner_lookups``), in one round trip.
NAMES = Prepared.per_dialect(
    lambda member: union_all(
        select(literal_column("'class'").label("kind"), _classes.c.name, _classes.c.id).where(
            member(_classes.c.name, "names")
        ),
        select(literal_column("'provider'"), _providers.c.uuid, _providers.c.id).where(
            member(_providers.c.uuid, "uuids")
        ),
        *owner_lookups(member),
    )
)

# What the consumers hold, with the provider uuids and class names the
# change feed reports them by.
HELD = Prepared.per_dialect(
    lambda member: (
        select(
            _allocations.c.consumer_id,
            _allocations.c.resource_provider_id,
            _allocations.c.resource_class_id,
            _allocations.c.used,
            _providers.c.uuid,
            _classes.c.name,
        )
        .join(_providers, _providers.c.id == _allocations.c.resource_provider_id)
        .join(_classes, _classes.c.id == _allocations.c.resource_class_id)
        .where(member(_allocations.c.consumer_id, "consumer_ids"))
    )
)

DELETE_HELD = Prepared.per_dialect(
    lambda member: delete(_allocations).where(member(_allocations.c.consumer_id, "consumer_ids"))
)
INSERT_ALLOCATIONS = insert(_allocations)


def _lock_in_order(member: Membership) -> Select[tuple[int]]:
    return (
        select(_providers.c.id)
        .where(member(_providers.c.id, "provider_ids"))
        .order_by(_providers.c.id)
        .with_for_update()
    )


LOCK_PROVIDERS = Prepared.per_dialect(
    lambda member: _lock_in_order(member).add_columns(_providers.c.generation)
)
# The subquery takes the row locks in id order; the update then only
# touches rows this transaction holds.
LOCK_AND_BUMP_PROVIDERS = Prepared.per_dialect(
    lambda member: (
        update(_providers)
        .where(_providers.c.id.in_(_lock_in_order(member).scalar_subquery()))
        .values(generation=_providers.c.generation + 1, updated_at=bindparam("bumped_at"))
        .returning(_providers.c.id, _providers.c.generation)
    )
)

_RETURNED = (
    "resource_provider_id, resource_class_id, used, "
    "total, reserved, min_unit, max_unit, step_size, allocation_ratio"
)
_FITS = (
    "(d.change <= 0 OR inventories.used + d.change "
    "<= (inventories.total - inventories.reserved) * inventories.allocation_ratio)"
)
# The new allocation rows go in with the usage, in the same round trip
# (SQLite: a second statement).
_USAGE_UPDATE = Prepared(
    text(
        f"""
        UPDATE inventories SET used = inventories.used + d.change
        FROM (SELECT json_extract(value, '$[0]') AS rp, json_extract(value, '$[1]') AS rc,
                     json_extract(value, '$[2]') AS change FROM json_each(:slots)) AS d
        WHERE inventories.resource_provider_id = d.rp AND inventories.resource_class_id = d.rc
          AND {_FITS}
        RETURNING {_RETURNED}
        """
    ),
    postgresql=text(
        f"""
        WITH inserted AS (
            INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
            SELECT * FROM unnest(CAST(:row_consumers AS integer[]),
                                 CAST(:row_providers AS integer[]),
                                 CAST(:row_classes AS integer[]), CAST(:row_used AS bigint[]))
        )
        UPDATE inventories SET used = inventories.used + d.change
        FROM unnest(CAST(:providers AS integer[]), CAST(:classes AS integer[]),
                    CAST(:changes AS bigint[])) AS d(rp, rc, change)
        WHERE inventories.resource_provider_id = d.rp AND inventories.resource_class_id = d.rc
          AND {_FITS}
        RETURNING {_RETURNED}
        """
    ).bindparams(
        bindparam("providers", type_=ARRAY(Integer)),
        bindparam("classes", type_=ARRAY(Integer)),
        bindparam("changes", type_=ARRAY(BigInteger)),
        bindparam("row_consumers", type_=ARRAY(Integer)),
        bindparam("row_providers", type_=ARRAY(Integer)),
        bindparam("row_classes", type_=ARRAY(Integer)),
        bindparam("row_used", type_=ARRAY(BigInteger)),
    ),
)
_INVENTORY_SLOTS = Prepared.per_dialect(
    lambda member: select(
        Inventory.resource_provider_id, Inventory.resource_class_id, Inventory.used, *LIMIT_COLUMNS
    ).where(member(_inventories.c.resource_provider_id, "provider_ids"))
)


@dataclass(frozen=True)
class InventorySlot:
    limits: InventoryLimits
    used: int


def _slots(rows: Sequence[Sequence[Any]]) -> dict[Slot, InventorySlot]:
    """Rows of (provider id, class id, used, *LIMIT_COLUMNS) by slot."""
    return {(row[0], row[1]): InventorySlot(InventoryLimits(*row[3:9]), row[2]) for row in rows}


async def apply(
    session: AsyncSession, changes: Mapping[Slot, int], rows: Sequence[AllocationRow]
) -> dict[Slot, InventorySlot]:
    """Insert the allocation ``rows``, and add each change to its inventory's
    usage where it fits (a change that does not grow usage always does); the
    slots changed, as they are after. A slot missing from the answer had no
    inventory or no room: nothing of it changed, and the caller must refuse
    the write (rolling the rows back)."""
    if not changes:
        return {}
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        params: dict[str, object] = {
            "providers": [slot[0] for slot in changes],
            "classes": [slot[1] for slot in changes],
            "changes": list(changes.values()),
            **{name: [row[index] for row in rows] for index, name in enumerate(_ROW_ARRAYS)},
        }
        return _slots(await _USAGE_UPDATE.rows(session, **params))
    params = {"slots": json.dumps([[*slot, change] for slot, change in changes.items()])}
    applied = _slots(await _USAGE_UPDATE.rows(session, **params))
    if rows:
        await session.execute(
            INSERT_ALLOCATIONS, [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in rows]
        )
    return applied


async def inventory_slots(
    session: AsyncSession, provider_ids: set[int]
) -> dict[Slot, InventorySlot]:
    """Every inventory of the providers, as this transaction sees it."""
    return _slots(await _INVENTORY_SLOTS.rows(session, provider_ids=sorted(provider_ids)))
