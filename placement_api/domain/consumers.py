"""Consumers: who holds allocations, and the generation that guards them.

A consumer row exists exactly while the consumer holds allocations: it is
created by its first allocation write and removed with its last allocation.
So "consumer generation null" (microversion 1.28) means "holds nothing".

Writers take locks in one global order — consumer types, projects and users
(by name), then consumers (by uuid), then providers (by id, in
``domain/claims.py``) — so concurrent writers queue instead of deadlocking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import (
    DateTime,
    Integer,
    Select,
    String,
    Table,
    bindparam,
    delete,
    func,
    literal_column,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from placement_api import errors
from placement_api.db.dialect import insert_ignoring_duplicates
from placement_api.db.models import Consumer, ConsumerType, Project, User
from placement_api.db.prepared import Membership, Prepared
from placement_api.domain.timestamps import now

# Owner of consumers written before microversion 1.8 made project and user
# required; the same placeholder identity OpenStack Placement uses.
INCOMPLETE_PROJECT_ID = "00000000-0000-0000-0000-000000000000"
INCOMPLETE_USER_ID = "00000000-0000-0000-0000-000000000000"
# How a consumer without a type (written before microversion 1.38) is reported.
UNKNOWN_CONSUMER_TYPE = "unknown"

# A consumer can be created and removed again by other requests between our
# look-up and our insert; after this many rounds we report a conflict.
_CREATE_ATTEMPTS = 3


@dataclass(frozen=True)
class ConsumerClaim:
    """Everything one consumer should hold after the write.

    ``allocations`` maps provider uuid -> resource class -> amount; empty
    means "release everything". ``None`` owner fields keep what an existing
    consumer has (a new consumer gets the incomplete-consumer placeholders
    and no type). ``generation`` is compared only when ``check_generation``.
    """

    uuid: str
    allocations: Mapping[str, Mapping[str, int]]
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None
    generation: int | None = None
    check_generation: bool = False


@dataclass(frozen=True)
class LockedConsumer:
    """A consumer row this transaction holds the lock of (``id`` None: absent).

    ``created``: inserted by this transaction, so it holds no allocations yet
    and its generation and owners are already final.
    ``generation``: what an existing consumer's was when locked.
    """

    uuid: str
    id: int | None
    created: bool = False
    generation: int | None = None


@dataclass
class ConsumerSet:
    """The locked consumers of one write, and the ids of the owners they name."""

    by_uuid: dict[str, LockedConsumer] = field(default_factory=dict)
    projects: dict[str, int] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)

    def ids(self) -> list[int]:
        return [c.id for c in self.by_uuid.values() if c.id is not None]

    def all_created(self) -> bool:
        return all(c.created for c in self.by_uuid.values())


def _generation_conflict(expected: int | None, given: int | None) -> errors.ConcurrentUpdate:
    wanted = "null" if expected is None else str(expected)
    return errors.ConcurrentUpdate(
        f"consumer generation conflict - expected {wanted} but got {given}",
        conflict=errors.CONFLICT_CONSUMER_GENERATION,
    )


# kind -> (table, name column): the owners a consumer names, looked up by name.
_OWNER_TABLES: dict[str, tuple[Any, InstrumentedAttribute[str]]] = {
    "type": (ConsumerType, ConsumerType.name),
    "project": (Project, Project.external_id),
    "user": (User, User.external_id),
}


def owner_lookups(member: Membership) -> list[Select[tuple[str, str, int]]]:
    """(kind, name, id) of the named owners of each kind; the claim's own
    look-up of names includes these. Built once (see ``claim_sql.py`` for why)."""
    return [
        select(literal_column(f"'{kind}'").label("kind"), column.label("name"), model.id).where(
            member(column, kind)
        )
        for kind, (model, column) in _OWNER_TABLES.items()
    ]


_FIND_OWNERS = Prepared.per_dialect(lambda member: union_all(*owner_lookups(member)))
Owners = dict[str, dict[str, int]]  # kind -> name -> id
_LOCK_ROW = Prepared(
    select(Consumer.id, Consumer.generation)
    .where(Consumer.uuid == bindparam("uuid"))
    .with_for_update()
)
_consumers = cast(Table, Consumer.__table__)
_NEW_COLUMNS = ("uuid", "project_id", "user_id", "consumer_type_id")
# Several rows: one statement of them all, inserted (and their unique keys
# locked) in the order given.
_INSERT_ABSENT = Prepared(
    sqlite.insert(_consumers)
    .on_conflict_do_nothing(index_elements=["uuid"])
    .returning(_consumers.c.uuid, _consumers.c.id),
    postgresql=text(
        """
        INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, updated_at)
        SELECT new.uuid, new.project_id, new.user_id, new.consumer_type_id, 1, :updated_at
        FROM unnest(:uuids, :project_ids, :user_ids, :consumer_type_ids)
             WITH ORDINALITY AS new(uuid, project_id, user_id, consumer_type_id, position)
        ORDER BY new.position
        ON CONFLICT (uuid) DO NOTHING
        RETURNING uuid, id
        """
    ).bindparams(
        bindparam("uuids", type_=ARRAY(String)),
        bindparam("project_ids", type_=ARRAY(Integer)),
        bindparam("user_ids", type_=ARRAY(Integer)),
        bindparam("consumer_type_ids", type_=ARRAY(Integer)),
        bindparam("updated_at", type_=DateTime(timezone=True)),
    ),
)
# A new generation for a consumer that still holds something; a NULL owner
# keeps the one it has.
_SETTLE = Prepared(
    update(_consumers)
    .where(_consumers.c.id == bindparam("consumer_id"))
    .values(
        generation=_consumers.c.generation + 1,
        updated_at=bindparam("updated_at"),
        project_id=func.coalesce(
            bindparam("new_project_id", type_=Integer), _consumers.c.project_id
        ),
        user_id=func.coalesce(bindparam("new_user_id", type_=Integer), _consumers.c.user_id),
        consumer_type_id=func.coalesce(
            bindparam("new_consumer_type_id", type_=Integer), _consumers.c.consumer_type_id
        ),
    )
)
_REMOVE = Prepared.per_dialect(
    lambda member: delete(_consumers).where(member(_consumers.c.id, "consumer_ids"))
)


async def _find_owners(session: AsyncSession, wanted: dict[str, set[str]]) -> Owners:
    """Ids by name of each kind's named rows, in one statement for all kinds."""
    found: Owners = {kind: {} for kind in _OWNER_TABLES}
    params = {kind: sorted(names) for kind, names in wanted.items()}
    for kind, name, row_id in await _FIND_OWNERS.rows(session, **params):
        found[kind][name] = row_id
    return found


def wanted_owners(claims: Sequence[ConsumerClaim]) -> dict[str, set[str]]:
    """The types, projects and users the claims name, by kind."""
    writing = [claim for claim in claims if claim.allocations]
    return {
        "type": {claim.consumer_type for claim in writing if claim.consumer_type},
        "project": {claim.project_id or INCOMPLETE_PROJECT_ID for claim in writing},
        "user": {claim.user_id or INCOMPLETE_USER_ID for claim in writing},
    }


async def _owner_ids(
    session: AsyncSession, claims: Sequence[ConsumerClaim], found: Owners | None
) -> ConsumerSet:
    """Ids of the types, projects and users the claims name, inserting missing
    ones (race-safe). ``found``: what a look-up of ``wanted_owners`` found already."""
    wanted = wanted_owners(claims)
    if found is None:
        found = await _find_owners(session, wanted)
    missing = {kind: names - found[kind].keys() for kind, names in wanted.items()}
    if any(missing.values()):
        for kind, (model, column) in _OWNER_TABLES.items():
            rows = [{column.key: name} for name in sorted(missing[kind])]
            await insert_ignoring_duplicates(session, model.__table__, rows)
        found = await _find_owners(session, wanted)
    return ConsumerSet(types=found["type"], projects=found["project"], users=found["user"])


def _created_and_removed(uuid: str) -> errors.ConcurrentUpdate:
    return errors.ConcurrentUpdate(
        f"consumer generation conflict - consumer {uuid} was created and removed "
        "by concurrent requests; re-read it and retry",
        conflict=errors.CONFLICT_CONSUMER_GENERATION,
    )


def _check_generation(claim: ConsumerClaim, current: int | None) -> None:
    if claim.check_generation and claim.generation != current:
        raise _generation_conflict(current, claim.generation)


async def _lock_row(session: AsyncSession, uuid: str) -> tuple[int, int] | None:
    rows = await _LOCK_ROW.rows(session, uuid=uuid)
    return (rows[0][0], rows[0][1]) if rows else None


def _new_row(claim: ConsumerClaim, owners: ConsumerSet) -> tuple[str, int, int, int | None]:
    """The consumer as ``settle`` would leave it (``_NEW_COLUMNS``; generation 1)."""
    return (
        claim.uuid,
        owners.projects[claim.project_id or INCOMPLETE_PROJECT_ID],
        owners.users[claim.user_id or INCOMPLETE_USER_ID],
        owners.types.get(claim.consumer_type or ""),
    )


async def _insert_absent(
    session: AsyncSession, claims: Sequence[ConsumerClaim], owners: ConsumerSet
) -> dict[str, int]:
    """Insert the claims' consumers in one statement, in the order given; the
    ids of those inserted by uuid (a consumer that exists already is not)."""
    rows = [_new_row(claim, owners) for claim in claims]
    updated_at = now()
    if session.get_bind().dialect.name == "postgresql":
        found = await _INSERT_ABSENT.rows(
            session,
            updated_at=updated_at,
            **{f"{name}s": [row[i] for row in rows] for i, name in enumerate(_NEW_COLUMNS)},
        )
    else:
        # SQLAlchemy sends the rows as one INSERT ("insertmanyvalues").
        values = [
            {**dict(zip(_NEW_COLUMNS, row, strict=True)), "generation": 1, "updated_at": updated_at}
            for row in rows
        ]
        found = (await session.execute(_INSERT_ABSENT.statement, values)).all()
    return {uuid: ident for uuid, ident in found}


async def _insert_if_absent(
    session: AsyncSession, claim: ConsumerClaim, owners: ConsumerSet
) -> int | None:
    """Insert the consumer settled; None when it exists already."""
    return (await _insert_absent(session, [claim], owners)).get(claim.uuid)


async def _lock_or_create(
    session: AsyncSession, claim: ConsumerClaim, owners: ConsumerSet
) -> LockedConsumer:
    # A client that says "new consumer" is nearly always right: insert first
    # and look for an existing row only when the insert finds one.
    new = expects_new(claim)
    for _ in range(_CREATE_ATTEMPTS):
        if new:
            new_id = await _insert_if_absent(session, claim, owners)
            if new_id is not None:
                return LockedConsumer(claim.uuid, id=new_id, created=True)
        row = await _lock_row(session, claim.uuid)
        _check_generation(claim, row[1] if row else None)
        if row is not None:
            return LockedConsumer(claim.uuid, id=row[0], generation=row[1])
        if not claim.allocations:
            return LockedConsumer(claim.uuid, id=None)
        new_id = await _insert_if_absent(session, claim, owners)
        if new_id is not None:
            return LockedConsumer(claim.uuid, id=new_id, created=True)
    raise _created_and_removed(claim.uuid)


def expects_new(claim: ConsumerClaim) -> bool:
    """The client says the consumer does not exist yet (generation null)."""
    return bool(claim.allocations) and claim.check_generation and claim.generation is None


async def _create_all(
    session: AsyncSession, claims: Sequence[ConsumerClaim], consumers: ConsumerSet
) -> None:
    """Every claim is for a new consumer: one insert for all of them, in uuid
    order as one by one (so concurrent writes take the same locks in the same
    order). A consumer that exists is a generation conflict, as it would be
    one by one; its row is read, not locked, only to say so."""
    created = await _insert_absent(session, claims, consumers)
    for claim in claims:
        ident = created.get(claim.uuid)
        if ident is None:
            current = await session.scalar(
                select(Consumer.generation).where(Consumer.uuid == claim.uuid)
            )
            if current is None:
                raise _created_and_removed(claim.uuid)
            raise _generation_conflict(current, claim.generation)
        consumers.by_uuid[claim.uuid] = LockedConsumer(claim.uuid, id=ident, created=True)


async def lock(
    session: AsyncSession, claims: Sequence[ConsumerClaim], owners: Owners | None = None
) -> ConsumerSet:
    """Lock (or create) every claimed consumer and check the generations given.

    A consumer that holds nothing and is given nothing is left absent. A new
    consumer is inserted at generation 1, already settled. ``owners``: the
    ids of ``wanted_owners(claims)`` when the caller looked them up.
    """
    consumers = await _owner_ids(session, claims, owners)
    ordered = sorted(claims, key=lambda c: c.uuid)
    if len(ordered) > 1 and all(expects_new(claim) for claim in ordered):
        # A scheduler's batch of claims: one statement instead of one per consumer.
        await _create_all(session, ordered, consumers)
        return consumers
    for claim in ordered:
        consumers.by_uuid[claim.uuid] = await _lock_or_create(session, claim, consumers)
    return consumers


def _settled(claim: ConsumerClaim, consumer_id: int, consumers: ConsumerSet) -> dict[str, Any]:
    """``_SETTLE``'s values for a consumer that keeps allocations."""
    return {
        "consumer_id": consumer_id,
        "updated_at": now(),
        "new_project_id": None
        if claim.project_id is None
        else consumers.projects[claim.project_id],
        "new_user_id": None if claim.user_id is None else consumers.users[claim.user_id],
        "new_consumer_type_id": (
            None if claim.consumer_type is None else consumers.types[claim.consumer_type]
        ),
    }


async def settle(
    session: AsyncSession, claims: Sequence[ConsumerClaim], consumers: ConsumerSet
) -> None:
    """After the allocation rows are written: bump the generation (and owner)
    of each consumer that still holds something, remove those that do not.
    Consumers this transaction created are settled already."""
    emptied: list[int] = []
    kept: list[dict[str, Any]] = []
    for claim in claims:
        consumer = consumers.by_uuid[claim.uuid]
        if consumer.id is None or consumer.created:
            continue
        if not claim.allocations:
            emptied.append(consumer.id)
        else:
            kept.append(_settled(claim, consumer.id, consumers))
    await _SETTLE.run_many(session, kept)
    if emptied:
        await _REMOVE.rows(session, consumer_ids=emptied)
