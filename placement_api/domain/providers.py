"""Resource providers: create, read, rename, re-parent, delete, list."""

from __future__ import annotations

import itertools
import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, delete, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from placement_api import errors
from placement_api.db.driver import fetch_all
from placement_api.db.models import Allocation, ResourceProvider
from placement_api.db.prepared import Prepared
from placement_api.domain import changes, provider_filters
from placement_api.domain.filters import AggregateFilter, TraitFilter
from placement_api.domain.timestamps import newest, now

_Parent = aliased(ResourceProvider, name="parent")
_Root = aliased(ResourceProvider, name="root")


@dataclass(frozen=True)
class ProviderRecord:
    id: int
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str
    created_at: datetime
    updated_at: datetime | None
    root_id: int

    @property
    def last_modified(self) -> datetime | None:
        return newest(self.created_at, self.updated_at)


def _record_change(session: AsyncSession, action: str, provider: ProviderRecord) -> None:
    changes.record(
        session,
        changes.PROVIDER,
        action,
        provider.uuid,
        generation=provider.generation,
        name=provider.name,
        parent_uuid=provider.parent_uuid,
        root_uuid=provider.root_uuid,
    )


RecordRow = tuple[int, str, str, int, str | None, str, datetime, datetime | None, int | None]


def record_query() -> Select[*RecordRow]:
    """Columns, not the ORM entity: a provider read only to be answered needs
    no identity map, and loading one costs more than its row."""
    return (
        select(
            ResourceProvider.id,
            ResourceProvider.uuid,
            ResourceProvider.name,
            ResourceProvider.generation,
            _Parent.uuid,
            _Root.uuid,
            ResourceProvider.created_at,
            ResourceProvider.updated_at,
            ResourceProvider.root_provider_id,
        )
        .outerjoin(_Parent, _Parent.id == ResourceProvider.parent_provider_id)
        .join(_Root, _Root.id == ResourceProvider.root_provider_id)
    )


def _record(row: Sequence[Any]) -> ProviderRecord:
    id, uuid, name, generation, parent_uuid, root_uuid, created_at, updated_at, root_id = row
    return ProviderRecord(
        id=id,
        uuid=uuid,
        name=name,
        generation=generation,
        parent_uuid=parent_uuid,
        root_uuid=root_uuid,
        created_at=created_at,
        updated_at=updated_at,
        root_id=root_id or id,
    )


async def find(session: AsyncSession, uuid: str) -> ProviderRecord | None:
    rows = await fetch_all(session, record_query().where(ResourceProvider.uuid == uuid))
    return _record(rows[0]) if rows else None


def not_found(uuid: str, suffix: str = "") -> errors.NotFound:
    return errors.NotFound(f"No resource provider with uuid {uuid} found{suffix}")


async def get(session: AsyncSession, uuid: str, *, suffix: str = "") -> ProviderRecord:
    found = await find(session, uuid)
    if found is None:
        raise not_found(uuid, suffix)
    return found


async def run_query(session: AsyncSession, query: Select[*RecordRow]) -> list[ProviderRecord]:
    return [_record(row) for row in await fetch_all(session, query.order_by(ResourceProvider.id))]


async def _name_taken(session: AsyncSession, name: str, other_than: int | None = None) -> bool:
    query = select(ResourceProvider.id).where(ResourceProvider.name == name)
    if other_than is not None:
        query = query.where(ResourceProvider.id != other_than)
    return (await session.execute(query)).first() is not None


def _duplicate(what: str) -> errors.Conflict:
    return errors.Conflict(
        f"Conflicting resource provider {what} already exists.", code=errors.DUPLICATE_NAME
    )


async def create(
    session: AsyncSession, *, name: str, uuid: str | None, parent_uuid: str | None
) -> ProviderRecord:
    uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
    failure = f'Unable to create resource provider "{name}", {uuid}: '
    if await find(session, uuid) is not None:
        raise _duplicate(f"uuid: {uuid}")
    if await _name_taken(session, name):
        raise _duplicate(f"name: {name}")
    parent = None
    if parent_uuid is not None:
        if parent_uuid == uuid:
            raise errors.BadRequest(
                failure + "parent provider UUID cannot be same as UUID. "
                "Please set parent provider UUID to None if there is no parent."
            )
        parent = await find(session, parent_uuid)
        if parent is None:
            raise errors.BadRequest(failure + "parent provider UUID does not exist.")
    provider = ResourceProvider(
        uuid=uuid,
        name=name,
        generation=0,
        parent_provider_id=parent.id if parent else None,
        root_provider_id=parent.root_id if parent else None,
        created_at=now(),
    )
    session.add(provider)
    try:
        await session.flush()
    except IntegrityError as exc:
        # A concurrent request created the same name or uuid first.
        raise _duplicate(f"name: {name}") from exc
    if parent is None:
        provider.root_provider_id = provider.id
        await session.flush()
    created = await get(session, uuid)
    _record_change(session, changes.CREATED, created)
    return created


async def _descendant_ids(session: AsyncSession, provider: ProviderRecord) -> set[int]:
    rows = await session.execute(
        select(ResourceProvider.id, ResourceProvider.parent_provider_id).where(
            ResourceProvider.root_provider_id == provider.root_id
        )
    )
    children: dict[int, list[int]] = {}
    for child_id, parent_id in rows:
        if parent_id is not None:
            children.setdefault(parent_id, []).append(child_id)
    found: set[int] = set()
    pending = [provider.id]
    while pending:
        current = pending.pop()
        for child in children.get(current, []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


async def _move_subtree(
    session: AsyncSession, provider: ProviderRecord, new_parent: ProviderRecord | None
) -> None:
    subtree = await _descendant_ids(session, provider) | {provider.id}
    new_root = new_parent.root_id if new_parent else provider.id
    # Lock the moving rows in id order, as allocation writers do, so a
    # re-parent and a claim spanning the same tree cannot deadlock.
    await session.execute(
        select(ResourceProvider.id)
        .where(ResourceProvider.id.in_(subtree))
        .order_by(ResourceProvider.id)
        .with_for_update()
    )
    await session.execute(
        update(ResourceProvider)
        .where(ResourceProvider.id == provider.id)
        .values(parent_provider_id=new_parent.id if new_parent else None)
    )
    await session.execute(
        update(ResourceProvider)
        .where(ResourceProvider.id.in_(subtree))
        .values(root_provider_id=new_root)
    )
    # The descendants' root changed too (the provider itself is recorded by its update).
    for moved in await run_query(session, record_query().where(ResourceProvider.id.in_(subtree))):
        if moved.id != provider.id:
            _record_change(session, changes.UPDATED, moved)


async def _change_parent(
    session: AsyncSession, provider: ProviderRecord, parent_uuid: str | None, *, may_reparent: bool
) -> None:
    failure = (
        f"Unable to save resource provider {provider.uuid}: Object action update failed because: "
    )
    if parent_uuid == provider.parent_uuid:
        return
    if parent_uuid is None:
        if not may_reparent:
            raise errors.BadRequest(failure + "un-parenting a provider is not currently allowed.")
        await _move_subtree(session, provider, None)
        return
    if provider.parent_uuid is not None and not may_reparent:
        raise errors.BadRequest(failure + "re-parenting a provider is not currently allowed.")
    new_parent = await find(session, parent_uuid)
    if new_parent is None:
        raise errors.BadRequest(failure + "parent provider UUID does not exist.")
    if new_parent.id == provider.id or new_parent.id in await _descendant_ids(session, provider):
        raise errors.BadRequest(failure + "creating loop in the provider tree is not allowed.")
    await _move_subtree(session, provider, new_parent)


async def update_provider(
    session: AsyncSession,
    uuid: str,
    *,
    name: str,
    parent_uuid: str | None,
    parent_given: bool,
    may_reparent: bool,
) -> ProviderRecord:
    provider = await get(session, uuid)
    if name != provider.name and await _name_taken(session, name, other_than=provider.id):
        raise _duplicate(f"name: {name}")
    if parent_given:
        await _change_parent(session, provider, parent_uuid, may_reparent=may_reparent)
    await session.execute(
        update(ResourceProvider)
        .where(ResourceProvider.id == provider.id)
        .values(name=name, updated_at=now())
    )
    try:
        await session.flush()
    except IntegrityError as exc:
        raise _duplicate(f"name: {name}") from exc
    updated = await get(session, uuid)
    _record_change(session, changes.UPDATED, updated)
    return updated


async def delete_provider(session: AsyncSession, uuid: str) -> None:
    provider = await get(session, uuid, suffix=" for delete")
    # Lock the row first: allocation writers lock it too, so no claim can
    # land between the in-use check and the delete.
    await session.execute(
        select(ResourceProvider.id).where(ResourceProvider.id == provider.id).with_for_update()
    )
    # Children are checked first, as upstream does: a parent that also has
    # allocations answers "cannot delete parent".
    has_children = exists().where(ResourceProvider.parent_provider_id == provider.id)
    if await session.scalar(select(has_children)):
        raise errors.Conflict(
            f"Unable to delete parent resource provider {uuid}: It has child resource providers.",
            code=errors.PROVIDER_CANNOT_DELETE_PARENT,
        )
    if await session.scalar(select(exists().where(Allocation.resource_provider_id == provider.id))):
        raise errors.Conflict(
            f"Unable to delete resource provider {uuid}: Resource provider has allocations.",
            code=errors.PROVIDER_INUSE,
        )
    await session.execute(delete(ResourceProvider).where(ResourceProvider.id == provider.id))
    _record_change(session, changes.DELETED, provider)


@dataclass(frozen=True)
class ProviderQuery:
    """Filters of GET /resource_providers; None means "not filtered on"."""

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: AggregateFilter | None = None
    resources: dict[str, int] | None = None
    required: TraitFilter | None = None


def _by_scalar_filters(name: bool, uuid: bool, in_tree: bool) -> Prepared:
    statement = record_query()
    if name:
        statement = statement.where(ResourceProvider.name == bindparam("name"))
    if uuid:
        statement = statement.where(ResourceProvider.uuid == bindparam("uuid"))
    if in_tree:
        tree_root = select(ResourceProvider.root_provider_id).where(
            ResourceProvider.uuid == bindparam("in_tree")
        )
        statement = statement.where(ResourceProvider.root_provider_id.in_(tree_root))
    return Prepared(statement.order_by(ResourceProvider.id))


# The lists clients repeat (a tree, a name, a uuid, everything): one
# statement each, built and compiled once.
_SCALAR_LISTS = {
    shape: _by_scalar_filters(*shape) for shape in itertools.product((False, True), repeat=3)
}


async def list_providers(session: AsyncSession, query: ProviderQuery) -> list[ProviderRecord]:
    if query.member_of is None and query.required is None and not query.resources:
        prepared = _SCALAR_LISTS[
            query.name is not None, query.uuid is not None, query.in_tree is not None
        ]
        rows = await prepared.rows(session, name=query.name, uuid=query.uuid, in_tree=query.in_tree)
        return [_record(row) for row in rows]
    statement = record_query()
    if query.name is not None:
        statement = statement.where(ResourceProvider.name == query.name)
    if query.uuid is not None:
        statement = statement.where(ResourceProvider.uuid == query.uuid)
    if query.in_tree is not None:
        statement = statement.where(provider_filters.in_tree_of(query.in_tree))
    if query.member_of is not None:
        statement = statement.where(provider_filters.with_aggregates(query.member_of))
    # Traits before resources: an unknown trait is reported ahead of an unknown class.
    if query.required is not None and not query.required.is_empty():
        try:
            ids = await provider_filters.filter_trait_ids(session, query.required)
        except errors.BadRequest as exc:
            raise errors.BadRequest(
                f'Invalid trait(s) in "required" parameter: {exc.detail}'
            ) from exc
        statement = statement.where(provider_filters.with_traits(query.required, ids))
    if query.resources:
        class_ids = await provider_filters.resource_class_ids(session, query.resources)
        amounts = {class_ids[name]: amount for name, amount in query.resources.items()}
        statement = statement.where(provider_filters.with_capacity(amounts))
    return await run_query(session, statement)
