"""The change feed: what every write changed, recorded in its own transaction.

Domain writes call the ``*_changed`` functions below; they only queue an
entry on the session. Just before the transaction commits, the queued
entries are appended to ``changes`` under consecutive indexes taken from
the one-row ``change_feed_head`` counter (``_append_pending``). The counter
row stays locked until the commit, so indexes are handed out in commit
order: a reader that sees index N has every index below N visible too, and
a rolled-back write leaves neither its changes nor a gap behind. On
PostgreSQL the same statement sends ``NOTIFY placement_changes`` so waiting
readers in every API worker wake when the write commits.

Readers (``read``) see a gap-free, duplicate-free list; a ``since`` whose
successor has been pruned (or that lies beyond the feed) is ``Gone``.
``docs/changes.md`` describes each entry's fields.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, event, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.util import await_

from placement_api import errors
from placement_api.db.models import Change, ChangeFeedHead, ResourceClass, ResourceProvider

if TYPE_CHECKING:
    from placement_api.domain.capacity import InventoryLimits
    from placement_api.domain.claims import ClaimPlan, Slot
    from placement_api.domain.providers import ProviderRecord

PROVIDER = "resource_provider"
INVENTORY = "inventory"
ALLOCATION = "allocation"
TRAIT = "trait"
AGGREGATE = "aggregate"
RESOURCE_CLASS = "resource_class"

CREATED = "created"
UPDATED = "updated"
DELETED = "deleted"

NOTIFY_CHANNEL = "placement_changes"
_HEAD_ID = 1
_PENDING = "placement.changes.pending"
_COMMITTED = "placement.changes.committed_index"


@dataclass(frozen=True)
class _Entry:
    resource: str
    action: str
    uuid: str
    details: dict[str, Any]


def _queue(session: AsyncSession, resource: str, action: str, uuid: str, **details: Any) -> None:
    pending: list[_Entry] = session.info.setdefault(_PENDING, [])
    pending.append(_Entry(resource, action, uuid, details))


def committed_index(session: AsyncSession) -> int | None:
    """The feed's last index after this session's commit, if it recorded anything."""
    found: int | None = session.info.get(_COMMITTED)
    return found


# --- what the domain writes record -------------------------------------------------


def provider_changed(session: AsyncSession, action: str, provider: ProviderRecord) -> None:
    _queue(
        session,
        PROVIDER,
        action,
        provider.uuid,
        generation=provider.generation,
        name=provider.name,
        parent_uuid=provider.parent_uuid,
        root_uuid=provider.root_uuid,
    )


def inventory_changed(
    session: AsyncSession,
    action: str,
    uuid: str,
    generation: int,
    inventories: Mapping[str, InventoryLimits],
    touched: Iterable[str],
) -> None:
    """``inventories``: the provider's whole inventory after the write;
    ``touched``: the classes the write added, changed or removed."""
    _queue(
        session,
        INVENTORY,
        action,
        uuid,
        generation=generation,
        resource_classes=sorted(set(touched)),
        inventories={name: limits.column_values() for name, limits in inventories.items()},
    )


def provider_traits_changed(
    session: AsyncSession, uuid: str, generation: int, traits: Iterable[str]
) -> None:
    _queue(session, TRAIT, UPDATED, uuid, generation=generation, traits=sorted(set(traits)))


def trait_changed(session: AsyncSession, action: str, name: str) -> None:
    """A custom trait created or deleted: no uuid, so ``uuid`` is the name."""
    _queue(session, TRAIT, action, name, name=name)


def provider_aggregates_changed(
    session: AsyncSession, uuid: str, generation: int, aggregates: Iterable[str]
) -> None:
    _queue(
        session, AGGREGATE, UPDATED, uuid, generation=generation, aggregates=sorted(set(aggregates))
    )


def resource_class_changed(
    session: AsyncSession, action: str, name: str, new_name: str | None = None
) -> None:
    """``uuid`` is the class's name before the write; a rename gives the new one."""
    _queue(session, RESOURCE_CLASS, action, name, name=new_name or name)


async def allocations_changed(
    session: AsyncSession,
    plan: ClaimPlan,
    usage_after: Mapping[Slot, int],
    generations: Mapping[int, int],
) -> None:
    """One change per consumer of an allocation write: its allocations after,
    and the usage and generation after of every provider it touched."""
    providers, classes = await _names(session, plan)
    wanted = plan.wanted()
    slots_of: dict[int, set[Slot]] = defaultdict(set)
    for row in (*plan.held, *wanted):
        slots_of[row.consumer_id].add(row.slot)
    after_of: dict[int, dict[str, dict[str, int]]] = defaultdict(dict)
    for row in wanted:
        after = after_of[row.consumer_id].setdefault(providers[row.provider_id], {})
        after[classes[row.class_id]] = row.used
    for claim in plan.claims:
        consumer = plan.consumers.by_uuid[claim.uuid]
        if consumer.id is None:
            continue
        slots = slots_of[consumer.id]
        usages: dict[str, dict[str, int]] = {}
        for provider_id, class_id in sorted(slots):
            usage = usages.setdefault(providers[provider_id], {})
            usage[classes[class_id]] = usage_after.get((provider_id, class_id), 0)
        if consumer.created:
            action, generation = CREATED, 1
        elif not claim.allocations:
            action, generation = DELETED, None
        else:
            action, generation = UPDATED, (consumer.generation or 0) + 1
        _queue(
            session,
            ALLOCATION,
            action,
            claim.uuid,
            generation=generation,
            allocations=after_of[consumer.id],
            usages=usages,
            resource_providers={providers[pid]: generations[pid] for pid, _ in sorted(slots)},
            resource_classes=sorted({classes[cid] for _, cid in slots}),
        )


async def _names(session: AsyncSession, plan: ClaimPlan) -> tuple[dict[int, str], dict[int, str]]:
    """Provider uuids and class names by id; those only held before are looked up."""
    providers = {pid: uuid for uuid, pid in plan.provider_ids.items()}
    classes = {cid: name for name, cid in plan.class_ids.items()}
    unknown_providers = {row.provider_id for row in plan.held} - providers.keys()
    unknown_classes = {row.class_id for row in plan.held} - classes.keys()
    if unknown_providers:
        rows = await session.execute(
            select(ResourceProvider.id, ResourceProvider.uuid).where(
                ResourceProvider.id.in_(sorted(unknown_providers))
            )
        )
        providers.update({pid: uuid for pid, uuid in rows})
    if unknown_classes:
        rows = await session.execute(
            select(ResourceClass.id, ResourceClass.name).where(
                ResourceClass.id.in_(sorted(unknown_classes))
            )
        )
        classes.update({cid: name for cid, name in rows})
    return providers, classes


# --- appending, in the writer's transaction -----------------------------------------


@event.listens_for(Session, "before_commit")
def _append_pending(session: Session) -> None:
    """Give the queued entries their indexes and insert them, as the last
    statements of the transaction. Runs inside the async session's commit
    (synchronously, on its connection), so no write path can forget it."""
    pending: list[_Entry] | None = session.info.pop(_PENDING, None)
    if not pending:
        return
    if session.get_bind().dialect.name == "postgresql":
        session.info[_COMMITTED] = _append_on_postgresql(session, pending)
    else:
        session.info[_COMMITTED] = _append_on_sqlite(session, pending)


# One round trip, as a prepared statement: take the indexes (the row lock
# is held until commit), queue the NOTIFY (sent only if the transaction
# commits) and insert the entries, given as one JSON array.
_POSTGRESQL_APPEND = f"""
WITH head AS (
    UPDATE change_feed_head SET last_index = last_index + $1 WHERE id = {_HEAD_ID}
    RETURNING last_index
), notified AS (
    SELECT pg_notify('{NOTIFY_CHANNEL}', last_index::text) FROM head
), inserted AS (
    INSERT INTO changes (id, resource, action, uuid, details)
    SELECT head.last_index - $1 + entry.ordinal, entry.resource, entry.action, entry.uuid,
           entry.details
    FROM head, json_to_recordset($2::json)
        AS entry(ordinal bigint, resource text, action text, uuid text, details json)
)
SELECT head.last_index FROM head, notified
"""


def _append_on_postgresql(session: Session, pending: list[_Entry]) -> int:
    # Straight to asyncpg, as the pool's ping does: the hottest write path
    # (claims) pays one statement for the feed, with no ORM work around it.
    driver: Any = session.connection().connection.driver_connection
    entries = json.dumps(
        [
            {
                "ordinal": ordinal,
                "resource": entry.resource,
                "action": entry.action,
                "uuid": entry.uuid,
                "details": entry.details,
            }
            for ordinal, entry in enumerate(pending, start=1)
        ],
        separators=(",", ":"),
    )
    return int(await_(driver.fetchval(_POSTGRESQL_APPEND, len(pending), entries)))


def _append_on_sqlite(session: Session, pending: list[_Entry]) -> int:
    # SQLite has one writer at a time (BEGIN IMMEDIATE): the order is given.
    advanced = (
        update(ChangeFeedHead)
        .where(ChangeFeedHead.id == _HEAD_ID)
        .values(last_index=ChangeFeedHead.last_index + len(pending))
        .returning(ChangeFeedHead.last_index)
    )
    last = int(session.execute(advanced).scalar_one())
    first = last - len(pending) + 1
    session.execute(
        insert(Change),
        [
            {
                "id": first + offset,
                "resource": entry.resource,
                "action": entry.action,
                "uuid": entry.uuid,
                "details": entry.details,
            }
            for offset, entry in enumerate(pending)
        ],
    )
    return last


# --- reading and pruning --------------------------------------------------------------


@dataclass(frozen=True)
class FeedPage:
    """The feed's last index when read, and the changes after ``since`` (at most ``limit``)."""

    index: int
    changes: list[dict[str, Any]]


def gone(since: int, index: int) -> errors.ChangesGone:
    return errors.ChangesGone(
        f"The changes after index {since} are no longer available (or never were): re-read "
        f"the state you follow, then follow the feed from index {index}.",
        index=index,
    )


async def last_index(session: AsyncSession) -> int:
    found = await session.scalar(
        select(ChangeFeedHead.last_index).where(ChangeFeedHead.id == _HEAD_ID)
    )
    return int(found or 0)


def _render(row: Change) -> dict[str, Any]:
    return {
        "index": row.id,
        "resource": row.resource,
        "action": row.action,
        "uuid": row.uuid,
        **row.details,
    }


async def read(session: AsyncSession, since: int, limit: int) -> FeedPage:
    """The changes after ``since``, in index order.

    The head is read first: every index up to it is committed (indexes are
    taken in commit order), so the changes read next run from ``since + 1``
    without a hole unless pruning removed the start — then they are gone.
    """
    head = await last_index(session)
    if since > head:
        raise gone(since, head)
    if since == head:
        return FeedPage(head, [])
    rows = await session.scalars(
        select(Change).where(Change.id > since, Change.id <= head).order_by(Change.id).limit(limit)
    )
    found = list(rows)
    if not found or found[0].id != since + 1:
        raise gone(since, head)
    return FeedPage(head, [_render(row) for row in found])


async def prune(session: AsyncSession, keep: int) -> int:
    """Remove all but the last ``keep`` changes; how many went."""
    cutoff = await last_index(session) - keep
    if cutoff <= 0:
        return 0
    result = await session.execute(delete(Change).where(Change.id <= cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
