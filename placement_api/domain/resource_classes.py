"""Resource classes: the standard ones (read-only) and operators' CUSTOM_ ones."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, exists, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.models import Allocation, Inventory, ResourceClass
from placement_api.domain import changes
from placement_api.domain.standard_names import is_standard_resource_class
from placement_api.domain.timestamps import newest, now


@dataclass(frozen=True)
class ResourceClassRecord:
    id: int
    name: str
    created_at: datetime
    updated_at: datetime | None

    @property
    def last_modified(self) -> datetime | None:
        return newest(self.created_at, self.updated_at)


def _record(row: ResourceClass) -> ResourceClassRecord:
    return ResourceClassRecord(
        id=row.id, name=row.name, created_at=row.created_at, updated_at=row.updated_at
    )


def not_found(name: str) -> errors.NotFound:
    return errors.NotFound(f"No such resource class {name}.")


async def list_classes(session: AsyncSession) -> list[ResourceClassRecord]:
    """Every class, standard ones first (they were synced before any custom one)."""
    rows = await session.scalars(select(ResourceClass).order_by(ResourceClass.id))
    return [_record(row) for row in rows]


async def find(session: AsyncSession, name: str) -> ResourceClassRecord | None:
    row = await session.scalar(select(ResourceClass).where(ResourceClass.name == name))
    return _record(row) if row is not None else None


async def get(session: AsyncSession, name: str) -> ResourceClassRecord:
    found = await find(session, name)
    if found is None:
        raise not_found(name)
    return found


async def ids_by_name(session: AsyncSession, names: Iterable[str]) -> dict[str, int]:
    """The ids of the named classes that exist; absent names are left out."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = await session.execute(
        select(ResourceClass.name, ResourceClass.id).where(ResourceClass.name.in_(wanted))
    )
    return {name: class_id for name, class_id in rows}


async def _insert(session: AsyncSession, name: str) -> ResourceClassRecord:
    row = ResourceClass(name=name, created_at=now())
    session.add(row)
    await session.flush()
    changes.resource_class_changed(session, changes.CREATED, name)
    return _record(row)


async def create(session: AsyncSession, name: str) -> ResourceClassRecord:
    duplicate = errors.Conflict(f"Conflicting resource class already exists: {name}")
    if await find(session, name) is not None:
        raise duplicate
    try:
        return await _insert(session, name)
    except IntegrityError as exc:
        # A concurrent request created the same name first.
        raise duplicate from exc


async def ensure(session: AsyncSession, name: str) -> tuple[ResourceClassRecord, bool]:
    """The class called ``name``, created when missing; the flag says whether it was."""
    found = await find(session, name)
    if found is not None:
        return found, False
    try:
        async with session.begin_nested():
            return await _insert(session, name), True
    except IntegrityError:
        # Lost a race to create it: it exists now, which is all PUT promises.
        return await get(session, name), False


async def rename(session: AsyncSession, name: str, new_name: str) -> ResourceClassRecord:
    current = await get(session, name)
    if is_standard_resource_class(current.name):
        raise errors.BadRequest(f"Cannot update standard resource class {name}")
    duplicate = errors.Conflict(f"Resource class already exists: {new_name}")
    if new_name != current.name and await find(session, new_name) is not None:
        raise duplicate
    try:
        await session.execute(
            update(ResourceClass)
            .where(ResourceClass.id == current.id)
            .values(name=new_name, updated_at=now())
        )
    except IntegrityError as exc:
        raise duplicate from exc
    changes.resource_class_changed(session, changes.UPDATED, name, new_name)
    return await get(session, new_name)


def _in_use(name: str) -> errors.Conflict:
    return errors.Conflict(
        f"Error in delete resource class: Cannot delete resource class {name}. "
        "Class is in use in inventory."
    )


async def delete_class(session: AsyncSession, name: str) -> None:
    current = await get(session, name)
    if is_standard_resource_class(current.name):
        raise errors.BadRequest(
            f"Error in delete resource class: Cannot delete standard resource class {name}."
        )
    referenced = or_(
        exists().where(Inventory.resource_class_id == current.id),
        exists().where(Allocation.resource_class_id == current.id),
    )
    if await session.scalar(select(referenced)):
        raise _in_use(name)
    try:
        await session.execute(delete(ResourceClass).where(ResourceClass.id == current.id))
    except IntegrityError as exc:
        # An inventory of this class was committed after the check above.
        raise _in_use(name) from exc
    changes.resource_class_changed(session, changes.DELETED, name)
