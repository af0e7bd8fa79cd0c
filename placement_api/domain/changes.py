"""The change feed's recorder: what every write changed, recorded in its own
transaction. Writes queue entries with the ``*_changed`` functions; the
commit appends them (``append_pending``); ``feed_index`` gives them their
indexes and reads them. How and why: docs/changes.md, How it works.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.util import await_

from placement_api.db.models import (
    CHANGE_COMMIT_SEQUENCE,
    Change,
    ChangeFeedHead,
)
from placement_api.db.session import SessionFactory, WaitObserver, make_session_factory

if TYPE_CHECKING:
    from placement_api.domain.capacity import InventoryLimits

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
class Entry:
    resource: str
    action: str
    uuid: str
    details: dict[str, Any]


def queue(session: AsyncSession, entries: Iterable[Entry]) -> None:
    """Queue entries for the commit to append (``append_pending``)."""
    pending: list[Entry] = session.info.setdefault(_PENDING, [])
    pending.extend(entries)


def record(session: AsyncSession, resource: str, action: str, uuid: str, **details: Any) -> None:
    """Queue one entry: what changed (``resource``, ``action``, ``uuid``) and its details."""
    pending: list[Entry] = session.info.setdefault(_PENDING, [])
    pending.append(Entry(resource, action, uuid, details))


# --- what the domain writes record -------------------------------------------------


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
    record(
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
    record(session, TRAIT, UPDATED, uuid, generation=generation, traits=sorted(set(traits)))


def trait_changed(session: AsyncSession, action: str, name: str) -> None:
    """A custom trait created or deleted: no uuid, so ``uuid`` is the name."""
    record(session, TRAIT, action, name, name=name)


def provider_aggregates_changed(
    session: AsyncSession, uuid: str, generation: int, aggregates: Iterable[str]
) -> None:
    record(
        session, AGGREGATE, UPDATED, uuid, generation=generation, aggregates=sorted(set(aggregates))
    )


def resource_class_changed(
    session: AsyncSession, action: str, name: str, new_name: str | None = None
) -> None:
    """``uuid`` is the class's name before the write; a rename gives the new one."""
    record(session, RESOURCE_CLASS, action, name, name=new_name or name)


# --- appending, in the writer's transaction -----------------------------------------


def written_by_statement(session: AsyncSession) -> None:
    """The write's own statement inserted its change
    (``claim_changes.allocation_template``): nothing is queued, but the
    commit still counts as recording one."""
    session.info[_WRITTEN] = True


def recording_session_factory(
    engine: AsyncEngine, *, on_connection_wait: WaitObserver | None = None
) -> SessionFactory:
    """Sessions whose commit appends the entries their writes queued: every
    session that writes through the domain comes from one of these."""
    return make_session_factory(
        engine, before_commit=append_pending, on_connection_wait=on_connection_wait
    )


def append_pending(session: Session) -> None:
    """Insert the queued entries as the last statement of the transaction:
    a ``before_commit`` listener, run inside the commit on its connection."""
    pending: list[Entry] | None = session.info.pop(_PENDING, None)
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


def _append_on_postgresql(session: Session, pending: list[Entry]) -> None:
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


def _append_on_sqlite(session: Session, pending: list[Entry]) -> None:
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
