"""Usages: what is consumed, per provider or per project (and user, and consumer type).

Totals are summed from the allocation rows themselves. Every query groups by
exactly the columns it selects (plus aggregates), which PostgreSQL requires
and SQLite tolerates either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, distinct, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import (
    Allocation,
    Consumer,
    ConsumerType,
    Inventory,
    Project,
    ResourceClass,
    User,
)
from placement_api.domain.consumers import UNKNOWN_CONSUMER_TYPE

# The pseudo consumer type that folds every consumer into one group.
ALL_CONSUMER_TYPES = "all"


@dataclass
class TypeUsage:
    """The totals of the consumers of one type (or of a pseudo type)."""

    consumer_count: int = 0
    amounts: dict[str, int] = field(default_factory=dict)


async def of_provider(session: AsyncSession, provider_id: int) -> dict[str, int]:
    """Amount used of every class the provider has inventory of (0 when unused)."""
    query = (
        select(ResourceClass.name, func.coalesce(func.sum(Allocation.used), 0))
        .select_from(Inventory)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .outerjoin(
            Allocation,
            and_(
                Allocation.resource_provider_id == Inventory.resource_provider_id,
                Allocation.resource_class_id == Inventory.resource_class_id,
            ),
        )
        .where(Inventory.resource_provider_id == provider_id)
        .group_by(ResourceClass.name)
    )
    return {name: int(total) for name, total in (await session.execute(query))}


def _owned_by(project_id: str, user_id: str | None) -> ColumnElement[bool]:
    condition: ColumnElement[bool] = Consumer.project_id.in_(
        select(Project.id).where(Project.external_id == project_id).scalar_subquery()
    )
    if user_id is not None:
        condition = and_(
            condition,
            Consumer.user_id.in_(
                select(User.id).where(User.external_id == user_id).scalar_subquery()
            ),
        )
    return condition


def _allocations_of(condition: ColumnElement[bool]) -> Select[Any]:
    """A base query over the allocations of the consumers matching ``condition``."""
    return (
        select(ResourceClass.name)
        .select_from(Allocation)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .outerjoin(ConsumerType, ConsumerType.id == Consumer.consumer_type_id)
        .where(condition)
    )


async def of_project(session: AsyncSession, project_id: str, user_id: str | None) -> dict[str, int]:
    """Amount used per class by the project's (or the project user's) consumers."""
    query = (
        _allocations_of(_owned_by(project_id, user_id))
        .add_columns(func.sum(Allocation.used))
        .group_by(ResourceClass.name)
    )
    return {name: int(total) for name, total in (await session.execute(query))}


def _type_filter(consumer_type: str | None) -> ColumnElement[bool]:
    if consumer_type is None or consumer_type == ALL_CONSUMER_TYPES:
        return true()
    if consumer_type == UNKNOWN_CONSUMER_TYPE:
        return Consumer.consumer_type_id.is_(None)
    return ConsumerType.name == consumer_type


async def of_project_by_type(
    session: AsyncSession,
    project_id: str,
    user_id: str | None,
    consumer_type: str | None,
) -> dict[str, TypeUsage]:
    """Totals grouped by consumer type (``unknown`` for consumers without one).

    ``consumer_type`` narrows to one type, to ``unknown``, or — when it is
    ``all`` — folds every consumer into a single ``all`` group.
    """
    condition = and_(_owned_by(project_id, user_id), _type_filter(consumer_type))
    folded = consumer_type == ALL_CONSUMER_TYPES
    amounts = _allocations_of(condition).add_columns(ConsumerType.name, func.sum(Allocation.used))
    amounts = amounts.group_by(ConsumerType.name, ResourceClass.name)
    counts = (
        select(ConsumerType.name, func.count(distinct(Consumer.id)))
        .select_from(Allocation)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .outerjoin(ConsumerType, ConsumerType.id == Consumer.consumer_type_id)
        .where(condition)
        .group_by(ConsumerType.name)
    )

    def group_of(type_name: str | None) -> str:
        return ALL_CONSUMER_TYPES if folded else (type_name or UNKNOWN_CONSUMER_TYPE)

    groups: dict[str, TypeUsage] = {}
    for type_name, count in await session.execute(counts):
        groups.setdefault(group_of(type_name), TypeUsage()).consumer_count += int(count)
    for class_name, type_name, total in await session.execute(amounts):
        group = groups[group_of(type_name)]
        group.amounts[class_name] = group.amounts.get(class_name, 0) + int(total)
    return groups
