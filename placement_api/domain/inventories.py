"""A provider's inventories: read, add, change, replace and remove them.

Every write first bumps the provider's generation — a compare-and-swap
against the generation the client sent, when the request carries one. That
UPDATE takes the provider's row lock, so from then on writers of the same
provider (inventory and allocation writers alike) run one at a time and the
usage read here (``inventories.used``, kept by allocation writes) is
current. Lock order: the provider row, then its inventory rows. Any error
raised after the bump rolls the whole transaction back, bump included.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.models import Inventory, ResourceClass, ResourceProvider
from placement_api.db.prepared import Prepared
from placement_api.domain import changes, providers, resource_classes
from placement_api.domain.capacity import LIMIT_COLUMNS, InventoryLimits, fits
from placement_api.domain.generations import bump_provider_generation
from placement_api.domain.providers import ProviderRecord
from placement_api.domain.timestamps import newest, now

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class InventoryRecord:
    id: int
    resource_class: str
    limits: InventoryLimits
    used: int
    created_at: datetime
    updated_at: datetime | None

    @property
    def last_modified(self) -> datetime | None:
        return newest(self.created_at, self.updated_at)


@dataclass(frozen=True)
class ProviderInventory:
    """A provider's inventories by class name, and its generation when read."""

    generation: int
    inventories: dict[str, InventoryRecord]

    @property
    def last_modified(self) -> datetime | None:
        return newest(*(record.last_modified for record in self.inventories.values()))


async def _load(
    session: AsyncSession, provider_id: int, *, lock: bool = False
) -> dict[str, InventoryRecord]:
    query = (
        select(
            Inventory.id,
            ResourceClass.name,
            Inventory.used,
            Inventory.created_at,
            Inventory.updated_at,
            *LIMIT_COLUMNS,
        )
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(Inventory.resource_provider_id == provider_id)
        .order_by(ResourceClass.id)
    )
    if lock:
        query = query.with_for_update(of=Inventory)
    records = {}
    for row in await session.execute(query):
        records[row.name] = InventoryRecord(
            id=row.id,
            resource_class=row.name,
            limits=InventoryLimits.from_row(row),
            used=row.used,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
    return records


# A provider's generation and inventories in one statement: one row per
# inventory, or a single row of NULL inventory columns when it has none.
_READ = Prepared(
    select(
        ResourceProvider.generation,
        ResourceClass.name,
        Inventory.id,
        Inventory.used,
        Inventory.created_at,
        Inventory.updated_at,
        *LIMIT_COLUMNS,
    )
    .select_from(ResourceProvider)
    .outerjoin(Inventory, Inventory.resource_provider_id == ResourceProvider.id)
    .outerjoin(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
    .where(ResourceProvider.uuid == bindparam("uuid"))
    .order_by(ResourceClass.id)
)


async def read(session: AsyncSession, uuid: str) -> ProviderInventory:
    rows = await _READ.rows(session, uuid=uuid)
    if not rows:
        raise providers.not_found(uuid)
    records = {}
    for _generation, name, id, used, created_at, updated_at, *limits in rows:
        if name is not None:
            records[name] = InventoryRecord(
                id=id,
                resource_class=name,
                limits=InventoryLimits(*limits),
                used=used,
                created_at=created_at,
                updated_at=updated_at,
            )
    return ProviderInventory(rows[0][0], records)


async def read_one(
    session: AsyncSession, uuid: str, resource_class: str
) -> tuple[int, InventoryRecord]:
    """The provider's generation and its inventory of one class."""
    current = await read(session, uuid)
    record = current.inventories.get(resource_class)
    if record is None:
        raise errors.NotFound(f"No inventory of class {resource_class} for {uuid}")
    return current.generation, record


def _check_capacity(
    uuid: str,
    resource_class: str,
    limits: InventoryLimits,
    *,
    action: str,
    reserved_may_equal_total: bool,
) -> None:
    """Refuse an inventory that leaves nothing to allocate (or less than nothing, from 1.26)."""
    capacity = int(limits.capacity)
    if capacity > 0 or (reserved_may_equal_total and capacity == 0):
        return
    relation = "greater than" if reserved_may_equal_total else "greater than or equal to"
    raise errors.BadRequest(
        f"Unable to {action} inventory for resource provider {uuid}: Invalid inventory for "
        f"'{resource_class}' on resource provider '{uuid}'. The reserved value is {relation} total."
    )


def in_use_conflict(
    prefix: str, uuid: str, classes: Iterable[str], reason: str = ""
) -> errors.Conflict:
    names = ", ".join(classes)
    return errors.Conflict(
        f"{prefix}Inventory for '{names}' on resource provider '{uuid}' in use.{reason}",
        code=errors.INVENTORY_INUSE,
    )


def _refuse_removal_in_use(prefix: str, uuid: str, records: Iterable[InventoryRecord]) -> None:
    in_use = [record.resource_class for record in records if record.used > 0]
    if in_use:
        raise in_use_conflict(prefix, uuid, in_use)


async def insert_inventory(
    session: AsyncSession, provider_id: int, class_id: int, limits: InventoryLimits
) -> None:
    """A new inventory row; nothing can be allocated from it yet."""
    await session.execute(
        insert(Inventory).values(
            resource_provider_id=provider_id,
            resource_class_id=class_id,
            used=0,
            created_at=now(),
            **limits.column_values(),
        )
    )


async def set_limits(session: AsyncSession, inventory_id: int, limits: InventoryLimits) -> None:
    """Rewrite an inventory's limits, keeping its usage."""
    await session.execute(
        update(Inventory)
        .where(Inventory.id == inventory_id)
        .values(updated_at=now(), **limits.column_values())
    )


async def _change(
    session: AsyncSession, uuid: str, record: InventoryRecord, limits: InventoryLimits
) -> None:
    """Change an inventory's limits.

    As upstream, any change is accepted, even one (a lower total or ratio,
    more reserved) that leaves the provider with more allocated than its new
    capacity: that is logged, and from then on claims there may only keep
    or reduce its usage (``domain/claims.py``) until it fits again.
    """
    if record.used > 0 and not fits(limits, record.used):
        LOG.warning(
            "inventory of %s on %s is now over capacity: usage %d, capacity %d",
            record.resource_class,
            uuid,
            record.used,
            int(limits.capacity),
        )
    await set_limits(session, record.id, limits)


async def remove(session: AsyncSession, ids: Iterable[int]) -> None:
    ids = list(ids)
    if ids:
        await session.execute(delete(Inventory).where(Inventory.id.in_(ids)))


def _record(
    session: AsyncSession, action: str, uuid: str, after: ProviderInventory, touched: Iterable[str]
) -> None:
    """Put the write in the change feed, with the provider's whole inventory after it."""
    limits = {name: record.limits for name, record in after.inventories.items()}
    changes.inventory_changed(session, action, uuid, after.generation, limits, touched)


async def _lock_provider(
    session: AsyncSession, uuid: str, generation: int | None
) -> tuple[ProviderRecord, int]:
    """The provider, locked and with its generation bumped from ``generation`` when given."""
    provider = await providers.get(session, uuid)
    new_generation = await bump_provider_generation(session, provider.id, uuid, generation)
    return provider, new_generation


async def replace_all(
    session: AsyncSession,
    uuid: str,
    *,
    generation: int,
    wanted: Mapping[str, InventoryLimits],
    reserved_may_equal_total: bool,
) -> ProviderInventory:
    """Make the provider's inventories exactly ``wanted``: add, change and remove classes."""
    provider, new_generation = await _lock_provider(session, uuid, generation)
    for name, limits in wanted.items():
        _check_capacity(
            uuid, name, limits, action="update", reserved_may_equal_total=reserved_may_equal_total
        )
    class_ids = await resource_classes.ids_by_name(session, wanted)
    unknown = sorted(set(wanted) - class_ids.keys())
    if unknown:
        raise errors.BadRequest(
            f"Unknown resource class in inventory for resource provider {uuid}: "
            f"No such resource class {unknown[0]}."
        )
    existing = await _load(session, provider.id, lock=True)
    removed = [record for name, record in existing.items() if name not in wanted]
    _refuse_removal_in_use("update conflict: ", uuid, removed)
    await remove(session, (record.id for record in removed))
    for name, limits in wanted.items():
        if name in existing:
            await _change(session, uuid, existing[name], limits)
        else:
            await insert_inventory(session, provider.id, class_ids[name], limits)
    after = ProviderInventory(new_generation, await _load(session, provider.id))
    _record(session, changes.UPDATED, uuid, after, [*wanted, *existing])
    return after


async def delete_all(session: AsyncSession, uuid: str) -> None:
    provider, new_generation = await _lock_provider(session, uuid, None)
    existing = await _load(session, provider.id, lock=True)
    _refuse_removal_in_use("", uuid, existing.values())
    await remove(session, (record.id for record in existing.values()))
    _record(session, changes.DELETED, uuid, ProviderInventory(new_generation, {}), existing)


async def add_one(
    session: AsyncSession,
    uuid: str,
    resource_class: str,
    limits: InventoryLimits,
    *,
    generation: int | None,
    reserved_may_equal_total: bool,
) -> tuple[int, InventoryRecord]:
    """Add an inventory of a class the provider has none of yet."""
    provider, new_generation = await _lock_provider(session, uuid, generation)
    failure = f"Unable to create inventory for resource provider {uuid}: "
    _check_capacity(
        uuid,
        resource_class,
        limits,
        action="create",
        reserved_may_equal_total=reserved_may_equal_total,
    )
    class_id = (await resource_classes.ids_by_name(session, [resource_class])).get(resource_class)
    if class_id is None:
        raise errors.BadRequest(failure + f"No such resource class {resource_class}.")
    if resource_class in await _load(session, provider.id, lock=True):
        raise errors.Conflict(
            f"Update conflict: Inventory for '{resource_class}' on resource provider "
            f"'{uuid}' already exists.",
            code=errors.CONCURRENT_UPDATE,
        )
    await insert_inventory(session, provider.id, class_id, limits)
    after = ProviderInventory(new_generation, await _load(session, provider.id))
    _record(session, changes.CREATED, uuid, after, [resource_class])
    return new_generation, after.inventories[resource_class]


async def update_one(
    session: AsyncSession,
    uuid: str,
    resource_class: str,
    limits: InventoryLimits,
    *,
    generation: int,
    reserved_may_equal_total: bool,
) -> tuple[int, InventoryRecord]:
    """Change the provider's existing inventory of one class."""
    provider, new_generation = await _lock_provider(session, uuid, generation)
    _check_capacity(
        uuid,
        resource_class,
        limits,
        action="update",
        reserved_may_equal_total=reserved_may_equal_total,
    )
    if not await resource_classes.ids_by_name(session, [resource_class]):
        raise resource_classes.not_found(resource_class)
    existing = (await _load(session, provider.id, lock=True)).get(resource_class)
    if existing is None:
        raise errors.BadRequest(
            f"No inventory record with resource class for resource provider {uuid}: "
            f"No inventory of class {resource_class} found."
        )
    await _change(session, uuid, existing, limits)
    after = ProviderInventory(new_generation, await _load(session, provider.id))
    _record(session, changes.UPDATED, uuid, after, [resource_class])
    return new_generation, after.inventories[resource_class]


async def delete_one(session: AsyncSession, uuid: str, resource_class: str) -> None:
    provider, new_generation = await _lock_provider(session, uuid, None)
    missing = f"No inventory of class {resource_class} found for delete"
    if not await resource_classes.ids_by_name(session, [resource_class]):
        raise errors.NotFound(f"{missing}: No such resource class {resource_class}.")
    existing = (await _load(session, provider.id, lock=True)).get(resource_class)
    if existing is None:
        raise errors.NotFound(f"{missing} on resource provider {uuid}.")
    _refuse_removal_in_use(
        f"Unable to delete inventory of class {resource_class}: ", uuid, [existing]
    )
    await remove(session, [existing.id])
    after = ProviderInventory(new_generation, await _load(session, provider.id))
    _record(session, changes.DELETED, uuid, after, [resource_class])
