"""Replacing the allocations of a set of consumers: the one write path for
PUT/DELETE /allocations/{uuid}, POST /allocations and the reshaper, so that
every allocation write locks, checks capacity and records its change the
same way. The order of its steps and why: docs/architecture.md, Consistency.
"""

from __future__ import annotations

import uuid as uuidlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.domain import changes as feed
from placement_api.domain import claim_changes, claim_names_sql, claim_sql
from placement_api.domain import consumers as consumer_rows
from placement_api.domain.capacity import LARGEST_CHANGE, LARGEST_UNIT, fits, unit_violation
from placement_api.domain.claim_plan import ClaimPlan, Row, Slot
from placement_api.domain.claim_sql import InventorySlot
from placement_api.domain.consumers import ConsumerClaim, ConsumerSet, LockedConsumer, Owners
from placement_api.domain.timestamps import now

__all__ = ["ClaimPlan", "Slot", "lock_providers", "prepare", "replace_allocations", "write"]


def normalize_uuid(text: str) -> str:
    """The canonical (lower-case, dashed) form of a UUID in any form Placement accepts."""
    try:
        return str(uuidlib.UUID(text))
    except ValueError:
        return text


def _missing_provider(uuid: str) -> errors.BadRequest:
    return errors.BadRequest(f"Allocation for resource provider '{uuid}' that does not exist.")


def _conflict(detail: str) -> errors.Conflict:
    # Upstream gives capacity refusals no error code; keep that, but say which kind of 409.
    return errors.Conflict(
        f"Unable to allocate inventory: {detail}", extra={"conflict": errors.CONFLICT_CAPACITY}
    )


async def _resolve_names(
    session: AsyncSession, claims: Sequence[ConsumerClaim], failure: str
) -> tuple[dict[str, int], dict[str, int], Owners, dict[str, int]]:
    """Ids of the classes and providers the claims name, and of the consumers'
    owners (``consumers.wanted_owners``), in one statement; on PostgreSQL, a
    claim of one new consumer also inserts it there (``claim_names_sql.NAMES_CREATING``):
    the last value, the ids of the consumers so created by uuid.

    Unknown classes are reported before missing providers.
    """
    names = {name for claim in claims for amounts in claim.allocations.values() for name in amounts}
    uuids = {uuid for claim in claims for uuid in claim.allocations}
    owners = consumer_rows.wanted_owners(claims)
    found: Owners = {kind: {} for kind in ("class", "provider", "consumer", *owners)}
    if not uuids:  # nothing to allocate, so no owner either
        return {}, {}, {kind: {} for kind in owners}, {}
    params = {kind: sorted(wanted) for kind, wanted in owners.items()}
    params |= {"names": sorted(names), "uuids": sorted(uuids)}
    statement = claim_names_sql.NAMES
    if len(claims) == 1 and _creates_in_one_round_trip(session, claims[0]):
        statement = claim_names_sql.NAMES_CREATING
        params |= claim_names_sql.new_consumer_values(claims[0])
    for kind, key, row_id in await statement.rows(session, **params):
        found[kind][key] = row_id
    class_ids, provider_ids, created = (
        found.pop("class"),
        found.pop("provider"),
        found.pop("consumer"),
    )
    unknown = sorted(names - class_ids.keys())
    if unknown:
        raise errors.BadRequest(f"{failure}: No such resource class {unknown[0]}.")
    for uuid in sorted(uuids):
        if uuid not in provider_ids:
            raise _missing_provider(uuid)
    return class_ids, provider_ids, found, created


def _creates_in_one_round_trip(session: AsyncSession, claim: ConsumerClaim) -> bool:
    # One consumer only: it is then the only consumer lock the write takes,
    # so the order of consumer locks holds whatever comes of the insert.
    return consumer_rows.expects_new(claim) and session.get_bind().dialect.name == "postgresql"


async def _held_rows(
    session: AsyncSession,
    consumer_ids: list[int],
    provider_uuids: dict[int, str],
    class_names: dict[int, str],
) -> list[Row]:
    """What the consumers hold; the names of its providers and classes go
    into ``provider_uuids`` and ``class_names``."""
    if not consumer_ids:
        return []
    held = []
    for consumer_id, provider_id, class_id, used, uuid, name in await claim_sql.HELD.rows(
        session, consumer_ids=consumer_ids
    ):
        held.append(Row(consumer_id, provider_id, class_id, used))
        provider_uuids[provider_id] = uuid
        class_names[class_id] = name
    return held


def _refuse_repeated_consumers(claims: Sequence[ConsumerClaim]) -> None:
    seen: set[str] = set()
    for claim in claims:
        if claim.uuid in seen:
            raise errors.BadRequest(f"Consumer {claim.uuid} appears more than once.")
        seen.add(claim.uuid)


async def prepare(
    session: AsyncSession, claims: Sequence[ConsumerClaim], *, failure: str
) -> ClaimPlan:
    """Resolve names (400 when unknown), lock the consumers and read what they hold.

    ``failure`` starts the message of an unknown-class error.
    """
    _refuse_repeated_consumers(claims)
    class_ids, provider_ids, owners, created = await _resolve_names(session, claims, failure)
    if created:  # by the names' look-up: one consumer, inserted settled
        ((uuid, ident),) = created.items()
        consumers = ConsumerSet(
            {uuid: LockedConsumer(uuid, ident, created=True)},
            projects=owners["project"],
            users=owners["user"],
            types=owners["type"],
        )
    else:
        consumers = await consumer_rows.lock(session, claims, owners)
    provider_uuids = {pid: uuid for uuid, pid in provider_ids.items()}
    class_names = {cid: name for name, cid in class_ids.items()}
    # Consumers this transaction created cannot hold anything yet.
    held = (
        []
        if consumers.all_created()
        else await _held_rows(session, consumers.ids(), provider_uuids, class_names)
    )
    return ClaimPlan(claims, consumers, provider_ids, class_ids, held, provider_uuids, class_names)


async def lock_providers(
    session: AsyncSession, ids: Iterable[int], *, bump: bool, names: dict[int, str] | None = None
) -> dict[int, int]:
    """Lock providers in ascending id order; their generations by id
    (bumped when ``bump``). A provider deleted meanwhile is a 400."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    if bump:
        rows = await claim_sql.LOCK_AND_BUMP_PROVIDERS.rows(
            session, provider_ids=wanted, bumped_at=now()
        )
    else:
        rows = await claim_sql.LOCK_PROVIDERS.rows(session, provider_ids=wanted)
    generations = {provider_id: generation for provider_id, generation in rows}
    _check_locked(wanted, generations, names or {})
    return generations


def _check_locked(wanted: list[int], generations: dict[int, int], names: dict[int, str]) -> None:
    """A provider deleted since it was looked up is reported as not existing,
    as if the delete had come first — which, once serialised, it did."""
    for provider_id in wanted:
        if provider_id not in generations:
            raise _missing_provider(names.get(provider_id, str(provider_id)))


class _Namer:
    """Provider uuids and class names for error messages."""

    def __init__(self, plan: ClaimPlan) -> None:
        self.providers = plan.provider_uuids
        self.classes = plan.class_names

    def cannot_create(self, slot: Slot, why: str) -> errors.Conflict:
        return _conflict(
            f"Unable to create allocation for '{self.classes[slot[1]]}' on resource provider "
            f"'{self.providers[slot[0]]}'. The requested amount would {why}."
        )


def _check_units(wanted: list[Row], slots: dict[Slot, InventorySlot], namer: _Namer) -> None:
    for row in sorted(wanted, key=lambda r: (namer.providers[r.provider_id], r.class_id)):
        slot = slots.get(row.slot)
        if slot is None:
            raise _conflict(
                f"Inventory for '{namer.classes[row.class_id]}' on resource provider "
                f"'{namer.providers[row.provider_id]}' invalid."
            )
        if unit_violation(slot.limits, row.used) is not None:
            raise namer.cannot_create(row.slot, "violate inventory constraints")


def _check_ranges(wanted: list[Row], changes: dict[Slot, int], namer: _Namer) -> None:
    """Refuse, before any SQL, the amounts and sums no inventory can hold, so
    none reaches a 64-bit column's arithmetic (an overflow there is no 4xx)."""
    for row in sorted(wanted, key=lambda r: (namer.providers[r.provider_id], r.class_id)):
        if row.used > LARGEST_UNIT:
            raise namer.cannot_create(row.slot, "violate inventory constraints")
    for slot in sorted(changes, key=lambda s: (namer.providers.get(s[0], ""), s[1])):
        if changes[slot] > LARGEST_CHANGE:
            raise namer.cannot_create(slot, "exceed the capacity")


def _usage_changes(held: Iterable[Row], wanted: Iterable[Row]) -> dict[Slot, int]:
    """Net change of usage per (provider, class) touched: what is wanted minus
    what was held (0 included: the change feed reports the usage of those too)."""
    changes: dict[Slot, int] = defaultdict(int)
    for row in held:
        changes[row.slot] -= row.used
    for row in wanted:
        changes[row.slot] += row.used
    return changes


def _check_capacity(
    changes: dict[Slot, int], slots: dict[Slot, InventorySlot], namer: _Namer
) -> None:
    for key in sorted(changes, key=lambda s: (namer.providers.get(s[0], ""), s[1])):
        change = changes[key]
        if change > 0 and not fits(slots[key].limits, slots[key].used + change):
            raise namer.cannot_create(key, "exceed the capacity")


async def _refuse(
    session: AsyncSession,
    plan: ClaimPlan,
    wanted: list[Row],
    changes: dict[Slot, int],
    applied: dict[Slot, InventorySlot],
) -> None:
    """Raise the error the write deserves, in the order the rules are checked:
    units of each amount, then capacity. Reads the inventories as they were
    before the write (the changes applied so far are taken off again)."""
    namer = _Namer(plan)
    slots = await claim_sql.inventory_slots(session, plan.touched_provider_ids())
    for slot in applied:
        slots[slot] = replace(slots[slot], used=slots[slot].used - changes[slot])
    _check_units(wanted, slots, namer)
    _check_capacity(changes, slots, namer)
    raise _conflict("the inventories changed during the write.")


async def write(
    session: AsyncSession, plan: ClaimPlan, *, lock_and_bump: bool = False, record: bool = False
) -> tuple[dict[Slot, int], dict[int, int]]:
    """Check and apply a prepared write. Its providers must already be
    locked, unless ``lock_and_bump``: then the write locks them (in id order)
    and bumps their generations first, in the same statement on PostgreSQL.
    With ``record`` too, the write records its change (in that statement
    when it can: ``_statement_entry``).

    Returns the usage after the write of every (provider, class) it touched
    and, with ``lock_and_bump``, the providers' generations after.
    """
    wanted = plan.wanted()
    changes = _usage_changes(plan.held, wanted)
    _check_ranges(wanted, changes, _Namer(plan))
    if plan.held:
        # The rows are the locked consumers'; only usage needs the providers locked.
        await claim_sql.DELETE_HELD.rows(session, consumer_ids=plan.consumers.ids())
    new_rows = [(row.consumer_id, row.provider_id, row.class_id, row.used) for row in wanted]
    generations: dict[int, int] = {}
    locking = sorted(plan.touched_provider_ids()) if lock_and_bump else []
    logged = False
    if locking:
        entry = _statement_entry(session, plan, changes, locking) if record else None
        generations, applied, logged = await claim_sql.lock_and_apply(
            session, locking, now(), changes, new_rows, entry
        )
        _check_locked(locking, generations, plan.provider_uuids)
    else:
        applied = await claim_sql.apply(session, changes, new_rows)
    required = {row.slot for row in wanted} | {slot for slot, c in changes.items() if c > 0}
    if locking and not required <= applied.keys():
        # The statement's snapshot predates its lock waits: an inventory
        # created meanwhile is seen only by a statement sent now.
        missing = {slot: change for slot, change in changes.items() if slot not in applied}
        applied |= await claim_sql.apply(session, missing, [])
    if not required <= applied.keys():
        await _refuse(session, plan, wanted, changes, applied)
    _check_units(wanted, applied, _Namer(plan))
    await consumer_rows.settle(session, plan.claims, plan.consumers)
    usage_after = {slot: inventory.used for slot, inventory in applied.items()}
    if logged:
        feed.written_by_statement(session)
    elif record:
        claim_changes.allocations_changed(session, plan, usage_after, generations)
    return usage_after, generations


def _statement_entry(
    session: AsyncSession, plan: ClaimPlan, changes: dict[Slot, int], locking: list[int]
) -> claim_changes.EntryTemplate | None:
    """The change for the PostgreSQL write statement to insert: one
    consumer's, whose numbers are exactly the statement's (every provider
    locked is one of a slot). Otherwise the change is queued after the write."""
    if session.get_bind().dialect.name != "postgresql" or len(plan.claims) != 1:
        return None
    if {slot[0] for slot in changes} != set(locking):
        return None
    return claim_changes.allocation_template(plan)


async def replace_allocations(
    session: AsyncSession, claims: Sequence[ConsumerClaim], *, failure: str
) -> None:
    """Give each consumer exactly the allocations of its claim, all or nothing."""
    plan = await prepare(session, claims, failure=failure)
    await write(session, plan, lock_and_bump=True, record=True)


async def remove_allocations(session: AsyncSession, consumer_uuid: str) -> None:
    """DELETE /allocations/{uuid}: release everything the consumer holds.

    Like upstream Placement, a plain delete leaves the providers'
    generations alone (clients and the conformance suite count on it); the
    provider rows are still locked so usage stays exact.
    """
    claim = ConsumerClaim(uuid=consumer_uuid, allocations={})
    plan = await prepare(session, [claim], failure="Unable to delete allocations")
    if not plan.held:
        raise errors.NotFound(f"No allocations for consumer '{consumer_uuid}'")
    generations = await lock_providers(session, plan.touched_provider_ids(), bump=False)
    usage_after, _ = await write(session, plan)
    claim_changes.allocations_changed(session, plan, usage_after, generations)
