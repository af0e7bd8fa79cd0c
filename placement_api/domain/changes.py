"""The change feed: what every write changed, recorded in its own transaction.

Domain writes call the ``*_changed`` functions below; they only queue an
entry on the session. Just before the transaction commits, the queued
entries are inserted into ``changes`` (``_append_pending``), ordered by
``(commit_seq, ordinal)``: one ``commit_seq`` per transaction, taken as its
last statement, so a write that waited for another's row locks always
orders after it. On PostgreSQL a one-consumer claim's statement inserts its
entry itself (``allocation_template``, ``claim_sql``), taking ``commit_seq``
after all its row locks: nothing the claim sends afterwards waits for one.

On PostgreSQL the entries are inserted without an index and nothing is
locked, so recording writes commit in parallel. A *sequencing run*
(``feed_index.sequence``) later gives the committed entries their indexes, in
``(commit_seq, ordinal)`` order, after the last index handed out; runs take
the ``change_feed_head`` row lock, so they are serial and indexes have no
gap or repeat. A write still in flight is never skipped: it has no index
yet, and gets a higher one than all that are given before it commits.
Readers run a sequencing run first, so a client reads its own writes. On
SQLite (one writer at a time) the entries get their indexes as they are
inserted.

Sequencing runs and readers live in ``feed_index``.
``docs/changes.md`` describes each entry's fields.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import event, insert, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.util import await_

from placement_api.db.models import (
    CHANGE_COMMIT_SEQUENCE,
    Change,
    ChangeFeedHead,
)

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
HEAD_ID = 1
_PENDING = "placement.changes.pending"
_RECORDED = "placement.changes.recorded"
_WRITTEN = "placement.changes.written"


@dataclass(frozen=True)
class _Entry:
    resource: str
    action: str
    uuid: str
    details: dict[str, Any]


def _queue(session: AsyncSession, resource: str, action: str, uuid: str, **details: Any) -> None:
    pending: list[_Entry] = session.info.setdefault(_PENDING, [])
    pending.append(_Entry(resource, action, uuid, details))


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


def allocations_changed(
    session: AsyncSession,
    plan: ClaimPlan,
    usage_after: Mapping[Slot, int],
    generations: Mapping[int, int],
) -> None:
    """One change per consumer of an allocation write: its allocations after,
    and the usage and generation after of every provider it touched."""
    pending: list[_Entry] = session.info.setdefault(_PENDING, [])
    pending.extend(
        _allocation_entries(plan, lambda slot: usage_after.get(slot, 0), generations.__getitem__)
    )


@dataclass(frozen=True)
class EntryTemplate:
    """A change for the statement that applies the write to insert itself
    (``claim_sql``): ``details`` is a ``format()`` string whose ``%s`` take,
    in order, the usage after of every slot the consumer touched (by
    provider id, then class id), then the generation after of every provider
    it touched (by id)."""

    resource: str
    action: str
    uuid: str
    details: str


# What json.dumps writes for a number left to the statement: "\u0000", which
# no provider uuid or class name holds (PostgreSQL text cannot hold a NUL).
_NUMBER = "\x00"
_NUMBER_JSON = json.dumps(_NUMBER)


def allocation_template(plan: ClaimPlan) -> EntryTemplate | None:
    """The change of a one-consumer write, built by the same code as
    ``allocations_changed``'s and written out the same way (compact JSON),
    with the numbers only the write's statement knows left as ``%s``. None
    when the write records no single change."""
    if len(plan.claims) != 1:
        return None
    entries = list(_allocation_entries(plan, lambda _slot: _NUMBER, lambda _id: _NUMBER))
    if len(entries) != 1:
        return None
    (entry,) = entries
    details = json.dumps(entry.details, separators=(",", ":")).replace("%", "%%")
    return EntryTemplate(
        entry.resource, entry.action, entry.uuid, details.replace(_NUMBER_JSON, "%s")
    )


def written_by_statement(session: AsyncSession) -> None:
    """The write's own statement inserted its change (``allocation_template``):
    nothing is queued, but the commit still counts as recording one."""
    session.info[_WRITTEN] = True


def _allocation_entries(
    plan: ClaimPlan, usage_of: Callable[[Slot], object], generation_of: Callable[[int], object]
) -> Iterator[_Entry]:
    providers, classes = plan.provider_uuids, plan.class_names
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
        slots = sorted(slots_of[consumer.id])
        usages: dict[str, dict[str, object]] = {}
        for provider_id, class_id in slots:
            usages.setdefault(providers[provider_id], {})[classes[class_id]] = usage_of(
                (provider_id, class_id)
            )
        if consumer.created:
            action, generation = CREATED, 1
        elif not claim.allocations:
            action, generation = DELETED, None
        else:
            action, generation = UPDATED, (consumer.generation or 0) + 1
        details = {
            "generation": generation,
            "allocations": after_of[consumer.id],
            "usages": usages,
            "resource_providers": {providers[pid]: generation_of(pid) for pid, _ in slots},
            "resource_classes": sorted({classes[cid] for _, cid in slots}),
        }
        yield _Entry(ALLOCATION, action, claim.uuid, details)


# --- appending, in the writer's transaction -----------------------------------------


@event.listens_for(Session, "before_commit")
def _append_pending(session: Session) -> None:
    """Insert the queued entries as the last statement of the transaction.
    Runs inside the async session's commit (synchronously, on its
    connection), so no write path can forget it."""
    pending: list[_Entry] | None = session.info.pop(_PENDING, None)
    written = session.info.pop(_WRITTEN, False)
    if pending:
        if session.get_bind().dialect.name == "postgresql":
            _append_on_postgresql(session, pending)
        else:
            _append_on_sqlite(session, pending)
    if pending or written:
        session.info[_RECORDED] = True


def recorded(session: AsyncSession) -> bool:
    """Whether this session's commit recorded changes (after the commit)."""
    return bool(session.info.pop(_RECORDED, False))


# One round trip each, as prepared statements, ``nextval`` inside the insert.
# Most writes record one entry (a claim for one consumer, a provider write):
# it goes as plain parameters, which the database takes in about 20 us less
# CPU than decoding a document into rows (docs/performance.md, "Change feed").
_POSTGRESQL_APPEND_ONE = f"""
INSERT INTO changes (commit_seq, ordinal, resource, action, uuid, details)
VALUES (nextval('{CHANGE_COMMIT_SEQUENCE.name}'), 0, $1, $2, $3, $4::json)
"""
# More entries come as one JSON array, so one statement fits any number of them.
_POSTGRESQL_APPEND = f"""
INSERT INTO changes (commit_seq, ordinal, resource, action, uuid, details)
SELECT batch.commit_seq, entry.ordinal, entry.resource, entry.action, entry.uuid, entry.details
FROM (SELECT nextval('{CHANGE_COMMIT_SEQUENCE.name}') AS commit_seq) AS batch,
     json_to_recordset($1::json)
        AS entry(ordinal integer, resource text, action text, uuid text, details json)
"""


def _append_on_postgresql(session: Session, pending: list[_Entry]) -> None:
    # Straight to asyncpg, as the pool's ping does: the hottest write path
    # (claims) pays one statement for the feed, with no ORM work around it.
    driver: Any = session.connection().connection.driver_connection
    if len(pending) == 1:
        entry = pending[0]
        details = json.dumps(entry.details, separators=(",", ":"))
        await_(
            driver.execute(
                _POSTGRESQL_APPEND_ONE, entry.resource, entry.action, entry.uuid, details
            )
        )
        return
    entries = json.dumps(
        [
            {
                "ordinal": ordinal,
                "resource": entry.resource,
                "action": entry.action,
                "uuid": entry.uuid,
                "details": entry.details,
            }
            for ordinal, entry in enumerate(pending)
        ],
        separators=(",", ":"),
    )
    await_(driver.execute(_POSTGRESQL_APPEND, entries))


def _append_on_sqlite(session: Session, pending: list[_Entry]) -> None:
    # SQLite has one writer at a time (BEGIN IMMEDIATE): the order is given.
    advanced = (
        update(ChangeFeedHead)
        .where(ChangeFeedHead.id == HEAD_ID)
        .values(last_index=ChangeFeedHead.last_index + len(pending))
        .returning(ChangeFeedHead.last_index)
    )
    first = int(session.execute(advanced).scalar_one()) - len(pending) + 1
    session.execute(
        insert(Change),
        [
            {
                "commit_seq": first,
                "ordinal": ordinal,
                "feed_index": first + ordinal,
                "resource": entry.resource,
                "action": entry.action,
                "uuid": entry.uuid,
                "details": entry.details,
            }
            for ordinal, entry in enumerate(pending)
        ],
    )
