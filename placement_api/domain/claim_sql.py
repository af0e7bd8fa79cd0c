"""The statements of an allocation write, built once (the look-up that
opens it is ``claim_names_sql.py``'s).

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
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    DateTime,
    Integer,
    Select,
    String,
    Table,
    bindparam,
    delete,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import (
    CHANGE_COMMIT_SEQUENCE,
    Allocation,
    Inventory,
    ResourceClass,
    ResourceProvider,
)
from placement_api.db.prepared import Membership, Prepared
from placement_api.domain.capacity import LIMIT_COLUMNS, InventoryLimits
from placement_api.domain.claim_changes import EntryTemplate
from placement_api.domain.claim_plan import Slot

# (consumer id, provider id, resource class id, amount)
AllocationRow = tuple[int, int, int, int]
_ROW_COLUMNS = ("consumer_id", "resource_provider_id", "resource_class_id", "used")
_ROW_ARRAYS = ("row_consumers", "row_providers", "row_classes", "row_used")

_allocations = cast(Table, Allocation.__table__)
_providers = cast(Table, ResourceProvider.__table__)
_classes = cast(Table, ResourceClass.__table__)
_inventories = cast(Table, Inventory.__table__)


# What the consumers hold, with the provider uuids and class names the
# change feed reports them by: looked up per row by key (a join would be
# planned, for an array of unknown length, as a scan of every provider).
HELD = Prepared.per_dialect(
    lambda member: select(
        _allocations.c.consumer_id,
        _allocations.c.resource_provider_id,
        _allocations.c.resource_class_id,
        _allocations.c.used,
        select(_providers.c.uuid)
        .where(_providers.c.id == _allocations.c.resource_provider_id)
        .scalar_subquery(),
        select(_classes.c.name)
        .where(_classes.c.id == _allocations.c.resource_class_id)
        .scalar_subquery(),
    ).where(member(_allocations.c.consumer_id, "consumer_ids"))
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
# touches rows this transaction holds (found by key, not by a scan).
LOCK_AND_BUMP_PROVIDERS = Prepared.per_dialect(
    lambda member: (
        update(_providers)
        .where(
            member(_providers.c.id, "provider_ids"),
            _providers.c.id.in_(_lock_in_order(member).scalar_subquery()),
        )
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
_ENTRY_FIELDS = ("resource", "action", "uuid", "details")
_BIGINT_ARRAYS = ("changes", "row_used")  # amounts; the other arrays hold ids
_ARRAY_PARAMETERS = [
    bindparam(name, type_=ARRAY(BigInteger if name in _BIGINT_ARRAYS else Integer))
    for name in ("providers", "classes", "changes", *_ROW_ARRAYS)
]


def _unseen(name: str) -> str:
    """The array bound as ``name``, read through a sub-select so that the
    planner never sees its values: each plan is then as good for any array,
    and PostgreSQL keeps one generic plan for the prepared statement instead
    of planning every run, which cost a claim's write statement more than
    running it (docs/performance.md, "Claims")."""
    element = "BIGINT" if name in _BIGINT_ARRAYS else "INTEGER"
    return f"CAST((SELECT :{name}) AS {element}[])"


_NEW_ROWS = f"unnest({', '.join(_unseen(name) for name in _ROW_ARRAYS)})"
_CHANGES = f"unnest({', '.join(_unseen(name) for name in ('providers', 'classes', 'changes'))})"
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
            SELECT * FROM {_NEW_ROWS}
        )
        UPDATE inventories SET used = inventories.used + d.change
        FROM {_CHANGES} AS d(rp, rc, change)
        WHERE inventories.resource_provider_id = d.rp AND inventories.resource_class_id = d.rc
          AND {_FITS}
        RETURNING {_RETURNED}
        """
    ).bindparams(*_ARRAY_PARAMETERS),
)
# PostgreSQL: a claim's provider locks, generation bumps, allocation rows
# and usage in one round trip. The rows and usage are written only when
# every provider was locked (one deleted meanwhile is not), and only once
# all the locks are held: that condition is evaluated before the first row
# is written. Usage rows changed meanwhile by the writer the locks waited
# for are re-read by the UPDATE (PostgreSQL re-checks its WHERE, capacity
# included, on the latest committed row), as a later statement would see them.
# An inventory created meanwhile is not seen: ``claims.write`` applies what
# is missing again, in a statement of its own.
# Given a change (``claim_changes.allocation_template``) it inserts that too, once
# every slot is applied. Its ``commit_seq`` must follow every row lock the
# transaction takes (``changes.py``): ``nextval`` is computed over the rows of
# two aggregates, which exist only once ``applied`` (inventory locks; it reads
# ``ready``, so all of ``locked``) has been read whole. What the transaction
# sends after locks nothing new (rows and consumer of the consumer it locked).
_LOCK_AND_APPLY = Prepared(
    text(
        f"""
        WITH locked AS (
            UPDATE resource_providers
            SET generation = resource_providers.generation + 1, updated_at = :bumped_at
            WHERE resource_providers.id = ANY({_unseen("provider_ids")})
              AND resource_providers.id IN (
                SELECT id FROM resource_providers WHERE id = ANY({_unseen("provider_ids")})
                ORDER BY id FOR UPDATE
            )
            RETURNING resource_providers.id, resource_providers.generation
        ),
        ready AS (
            SELECT count(*) = cardinality(:provider_ids) AS all_locked FROM locked
        ),
        inserted AS (
            INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
            SELECT * FROM {_NEW_ROWS}
            WHERE (SELECT all_locked FROM ready)
        ),
        applied AS (
            UPDATE inventories SET used = inventories.used + d.change
            FROM {_CHANGES} AS d(rp, rc, change)
            WHERE inventories.resource_provider_id = d.rp
              AND inventories.resource_class_id = d.rc
              AND {_FITS} AND (SELECT all_locked FROM ready)
            RETURNING {_RETURNED}
        ),
        logged AS (
            INSERT INTO changes (commit_seq, ordinal, resource, action, uuid, details)
            SELECT nextval('{CHANGE_COMMIT_SEQUENCE.name}'), 0, :entry_resource, :entry_action,
                   :entry_uuid, format(:entry_details, VARIADIC usage.numbers || gens.numbers)::json
            FROM (
                SELECT count(*) = cardinality(:providers) AS complete,
                       array_agg(used ORDER BY resource_provider_id, resource_class_id) AS numbers
                FROM applied
            ) AS usage,
            (SELECT array_agg(generation::bigint ORDER BY id) AS numbers FROM locked) AS gens
            WHERE usage.complete AND :entry_details IS NOT NULL
            RETURNING commit_seq
        )
        SELECT 'slot', {_RETURNED} FROM applied
        UNION ALL
        SELECT 'locked', id, generation, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM locked
        UNION ALL
        SELECT 'logged', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM logged
        """
    ).bindparams(
        bindparam("provider_ids", type_=ARRAY(Integer)),
        bindparam("bumped_at", type_=DateTime(timezone=True)),
        *(bindparam(f"entry_{name}", type_=String) for name in _ENTRY_FIELDS),
        *_ARRAY_PARAMETERS,
    )
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
    if session.get_bind().dialect.name == "postgresql":
        return _slots(await _USAGE_UPDATE.rows(session, **_arrays(changes, rows)))
    params = {"slots": json.dumps([[*slot, change] for slot, change in changes.items()])}
    applied = _slots(await _USAGE_UPDATE.rows(session, **params))
    if rows:
        await session.execute(
            INSERT_ALLOCATIONS, [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in rows]
        )
    return applied


async def lock_and_apply(
    session: AsyncSession,
    provider_ids: Sequence[int],
    bumped_at: datetime,
    changes: Mapping[Slot, int],
    rows: Sequence[AllocationRow],
    entry: EntryTemplate | None = None,
) -> tuple[dict[int, int], dict[Slot, InventorySlot], bool]:
    """Lock the providers in id order and bump their generations, then
    ``apply``; the generations after, by provider id, the slots changed, and
    whether ``entry`` (numbers: ``changes``' slots, then ``provider_ids``) was
    inserted. A provider missing from the generations no longer exists: then
    nothing was applied."""
    if session.get_bind().dialect.name != "postgresql":
        generations = await _lock_and_bump(session, provider_ids, bumped_at)
        if len(generations) < len(provider_ids):
            return generations, {}, False
        return generations, await apply(session, changes, rows), False
    fields = {f"entry_{name}": getattr(entry, name, None) for name in _ENTRY_FIELDS}
    values = {"provider_ids": list(provider_ids), "bumped_at": bumped_at, **fields}
    found = await _LOCK_AND_APPLY.rows(session, **values, **_arrays(changes, rows))
    slots = [row[1:] for row in found if row[0] == "slot"]
    generations = {row[1]: row[2] for row in found if row[0] == "locked"}
    logged = any(row[0] == "logged" for row in found)
    return generations, _slots(slots), logged


async def _lock_and_bump(
    session: AsyncSession, provider_ids: Sequence[int], bumped_at: datetime
) -> dict[int, int]:
    rows = await LOCK_AND_BUMP_PROVIDERS.rows(
        session, provider_ids=list(provider_ids), bumped_at=bumped_at
    )
    return {provider_id: generation for provider_id, generation in rows}


def _arrays(changes: Mapping[Slot, int], rows: Sequence[AllocationRow]) -> dict[str, list[int]]:
    """The PostgreSQL usage update's parameters: one array per column."""
    return {
        "providers": [slot[0] for slot in changes],
        "classes": [slot[1] for slot in changes],
        "changes": list(changes.values()),
        **{name: [row[index] for row in rows] for index, name in enumerate(_ROW_ARRAYS)},
    }


async def inventory_slots(
    session: AsyncSession, provider_ids: set[int]
) -> dict[Slot, InventorySlot]:
    """Every inventory of the providers, as this transaction sees it."""
    return _slots(await _INVENTORY_SLOTS.rows(session, provider_ids=sorted(provider_ids)))
