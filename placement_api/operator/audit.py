"""``placement-api audit``: rows the service's invariants say cannot exist.

The API keeps them out, but a restore, a hand-written SQL fix or an import
can bring them in; allocations and consumers have no foreign keys
(docs/architecture.md, "Integrity without foreign keys"), so rows pointing
at nothing are looked for here. Each check reads the whole table once; the fixes only do
what is safe without knowing intent: recompute a derived column, delete
rows that belong to nothing. Over-capacity providers are reported only, as
deciding which consumer gives way is the operator's call, and so are
allocations of a class the provider no longer has inventory of.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, ScalarSelect, and_, delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from placement_api.db.engine import create_engine
from placement_api.db.models import (
    Allocation,
    Consumer,
    ConsumerType,
    Inventory,
    Project,
    ResourceClass,
    ResourceProvider,
    User,
)
from placement_api.db.session import unit_of_work
from placement_api.domain import feed_index
from placement_api.domain.changes import recording_session_factory


@dataclass(frozen=True)
class Finding:
    check: str
    subject: str
    details: str
    fixable: bool


@dataclass(frozen=True)
class Check:
    name: str
    find: Callable[[AsyncSession], Awaitable[list[Finding]]]
    fix: Callable[[AsyncSession], Awaitable[int]] | None


USAGE_DRIFT = "usage_drift"
OVER_CAPACITY = "over_capacity"
EMPTY_CONSUMER = "consumer_without_allocations"
ORPHAN_ALLOCATION = "allocation_on_missing_provider"
CONSUMERLESS_ALLOCATION = "allocation_of_missing_consumer"
CLASSLESS_ALLOCATION = "allocation_of_missing_class"
OWNERLESS_CONSUMER = "consumer_of_missing_owner"
UNINVENTORIED = "allocation_without_inventory"


def _allocated_sum() -> ScalarSelect[int]:
    return (
        select(func.coalesce(func.sum(Allocation.used), 0))
        .where(
            Allocation.resource_provider_id == Inventory.resource_provider_id,
            Allocation.resource_class_id == Inventory.resource_class_id,
        )
        .scalar_subquery()
    )


async def _usage_drift(session: AsyncSession) -> list[Finding]:
    allocated = _allocated_sum()
    rows = await session.execute(
        select(ResourceProvider.uuid, ResourceClass.name, Inventory.used, allocated)
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(Inventory.used != allocated)
        .order_by(ResourceProvider.uuid, ResourceClass.name)
    )
    return [
        Finding(
            USAGE_DRIFT, f"{provider} {name}", f"used column {used}, allocations sum {total}", True
        )
        for provider, name, used, total in rows
    ]


async def _fix_usage_drift(session: AsyncSession) -> int:
    allocated = _allocated_sum()
    result = await session.execute(
        update(Inventory).where(Inventory.used != allocated).values(used=allocated)
    )
    return result.rowcount or 0  # type: ignore[attr-defined]


async def _over_capacity(session: AsyncSession) -> list[Finding]:
    capacity = (Inventory.total - Inventory.reserved) * Inventory.allocation_ratio
    rows = await session.execute(
        select(ResourceProvider.uuid, ResourceClass.name, Inventory.used, capacity)
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(Inventory.used > capacity)
        .order_by(ResourceProvider.uuid, ResourceClass.name)
    )
    return [
        Finding(OVER_CAPACITY, f"{provider} {name}", f"used {used} > capacity {limit:g}", False)
        for provider, name, used, limit in rows
    ]


def _has_no_allocation() -> ColumnElement[bool]:
    return ~exists().where(Allocation.consumer_id == Consumer.id)


async def _empty_consumers(session: AsyncSession) -> list[Finding]:
    rows = await session.execute(
        select(Consumer.uuid).where(_has_no_allocation()).order_by(Consumer.uuid)
    )
    return [
        Finding(EMPTY_CONSUMER, uuid, "a consumer record with no allocation", True)
        for (uuid,) in rows
    ]


async def _fix_empty_consumers(session: AsyncSession) -> int:
    result = await session.execute(delete(Consumer).where(_has_no_allocation()))
    return result.rowcount or 0  # type: ignore[attr-defined]


def _provider_missing() -> ColumnElement[bool]:
    return ~exists().where(ResourceProvider.id == Allocation.resource_provider_id)


def _consumer_missing() -> ColumnElement[bool]:
    return ~exists().where(Consumer.id == Allocation.consumer_id)


def _class_missing() -> ColumnElement[bool]:
    return ~exists().where(ResourceClass.id == Allocation.resource_class_id)


async def _allocations_where(
    session: AsyncSession, missing: ColumnElement[bool], check: str, what: str
) -> list[Finding]:
    """Allocations whose ``what`` (named by its id) no longer exists, by consumer."""
    # Aliased: ``missing`` correlates to the allocation, never to this join.
    consumer = aliased(Consumer)
    rows = await session.execute(
        select(
            consumer.uuid,
            Allocation.consumer_id,
            Allocation.resource_provider_id,
            Allocation.resource_class_id,
            Allocation.used,
        )
        .outerjoin(consumer, consumer.id == Allocation.consumer_id)
        .where(missing)
        .order_by(consumer.uuid, Allocation.consumer_id)
    )
    findings = []
    for uuid, consumer_id, provider_id, class_id, used in rows:
        ids = {"provider": provider_id, "consumer": consumer_id, "class": class_id}
        subject = uuid or f"consumer id {consumer_id}"
        detail = f"{used} of class id {class_id} on provider id {provider_id}"
        findings.append(
            Finding(check, subject, f"{detail}: {what} id {ids[what]} no longer exists", True)
        )
    return findings


async def _orphan_allocations(session: AsyncSession) -> list[Finding]:
    return await _allocations_where(session, _provider_missing(), ORPHAN_ALLOCATION, "provider")


async def _consumerless_allocations(session: AsyncSession) -> list[Finding]:
    return await _allocations_where(
        session, _consumer_missing(), CONSUMERLESS_ALLOCATION, "consumer"
    )


async def _classless_allocations(session: AsyncSession) -> list[Finding]:
    return await _allocations_where(session, _class_missing(), CLASSLESS_ALLOCATION, "class")


def _deleting(
    missing: Callable[[], ColumnElement[bool]],
) -> Callable[[AsyncSession], Awaitable[int]]:
    async def fix(session: AsyncSession) -> int:
        result = await session.execute(delete(Allocation).where(missing()))
        return result.rowcount or 0  # type: ignore[attr-defined]

    return fix


async def _ownerless_consumers(session: AsyncSession) -> list[Finding]:
    """Consumers whose project, user or consumer type row is gone: reported
    only, as whom a consumer belongs to is not ours to guess."""
    owners = (
        ("project", Consumer.project_id, exists().where(Project.id == Consumer.project_id)),
        ("user", Consumer.user_id, exists().where(User.id == Consumer.user_id)),
        (
            "consumer type",
            Consumer.consumer_type_id,
            Consumer.consumer_type_id.is_(None)
            | exists().where(ConsumerType.id == Consumer.consumer_type_id),
        ),
    )
    columns = [column for _, reference, found in owners for column in (reference, found)]
    rows = await session.execute(
        select(Consumer.uuid, *columns)
        .where(~and_(*(found for _, _, found in owners)))
        .order_by(Consumer.uuid)
    )
    findings = []
    for uuid, *values in rows:
        # values: (reference, found) of each owner, in the order of ``owners``.
        checked = zip(owners, values[::2], values[1::2], strict=True)
        gone = [
            f"{kind} id {ref} no longer exists" for (kind, _, _), ref, found in checked if not found
        ]
        findings.append(Finding(OWNERLESS_CONSUMER, uuid, ", ".join(gone), False))
    return findings


async def _uninventoried_allocations(session: AsyncSession) -> list[Finding]:
    """Allocations of a class their (existing) provider has no inventory of."""
    has_inventory = exists().where(
        Inventory.resource_provider_id == Allocation.resource_provider_id,
        Inventory.resource_class_id == Allocation.resource_class_id,
    )
    rows = await session.execute(
        select(Consumer.uuid, ResourceProvider.uuid, ResourceClass.name, Allocation.used)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceProvider, ResourceProvider.id == Allocation.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .where(~has_inventory)
        .order_by(Consumer.uuid, ResourceProvider.uuid)
    )
    return [
        Finding(UNINVENTORIED, consumer, f"{used} {name} on {provider}, which has none", False)
        for consumer, provider, name, used in rows
    ]


# Orphans first: deleting them can leave consumers empty, fixed next.
CHECKS: tuple[Check, ...] = (
    Check(ORPHAN_ALLOCATION, _orphan_allocations, _deleting(_provider_missing)),
    Check(CONSUMERLESS_ALLOCATION, _consumerless_allocations, _deleting(_consumer_missing)),
    Check(CLASSLESS_ALLOCATION, _classless_allocations, _deleting(_class_missing)),
    Check(USAGE_DRIFT, _usage_drift, _fix_usage_drift),
    Check(EMPTY_CONSUMER, _empty_consumers, _fix_empty_consumers),
    Check(OVER_CAPACITY, _over_capacity, None),
    Check(UNINVENTORIED, _uninventoried_allocations, None),
    Check(OWNERLESS_CONSUMER, _ownerless_consumers, None),
)


@dataclass
class AuditReport:
    findings: list[Finding]
    fixed: dict[str, int]


async def run_audit(
    database_url: str, *, fix: bool, on_check: Callable[[str], None]
) -> AuditReport:
    """Every check in its own transaction; with ``fix``, its fix first, in the same one."""
    engine = create_engine(database_url, pool_size=1)
    factory = recording_session_factory(engine)
    report = AuditReport(findings=[], fixed={})
    try:
        for check in CHECKS:
            on_check(check.name)
            async with unit_of_work(factory, write=fix) as session:
                if fix and check.fix is not None:
                    report.fixed[check.name] = await check.fix(session)
                    if report.fixed[check.name]:
                        # Fixes record no change-feed entries.
                        await session.execute(feed_index.NEW_EPOCH, feed_index.new_epoch("audit"))
                report.findings.extend(await check.find(session))
    finally:
        await engine.dispose()
    return report
