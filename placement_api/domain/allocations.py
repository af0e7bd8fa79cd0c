"""Reading allocations: by consumer and by provider.

Writes live in ``domain/claims.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import (
    Allocation,
    Consumer,
    ConsumerType,
    Project,
    ResourceClass,
    ResourceProvider,
    User,
)
from placement_api.db.prepared import Prepared
from placement_api.domain.timestamps import newest


@dataclass
class ProviderShare:
    """What one consumer takes from one provider."""

    generation: int
    resources: dict[str, int] = field(default_factory=dict)


@dataclass
class ConsumerAllocations:
    """Everything one consumer holds, by provider uuid."""

    uuid: str
    project_id: str
    user_id: str
    generation: int
    consumer_type: str | None
    providers: dict[str, ProviderShare] = field(default_factory=dict)
    last_modified: datetime | None = None


@dataclass
class ConsumerShare:
    """What one consumer takes from the provider being listed."""

    generation: int
    resources: dict[str, int] = field(default_factory=dict)


@dataclass
class ProviderAllocations:
    """Every allocation against one provider, by consumer uuid."""

    consumers: dict[str, ConsumerShare] = field(default_factory=dict)
    last_modified: datetime | None = None


_FOR_CONSUMER = Prepared(
    select(
        Consumer.generation,
        Project.external_id,
        User.external_id,
        ConsumerType.name,
        ResourceProvider.uuid,
        ResourceProvider.generation,
        ResourceClass.name,
        Allocation.used,
        Allocation.created_at,
        Allocation.updated_at,
    )
    .join(Consumer, Consumer.id == Allocation.consumer_id)
    .join(Project, Project.id == Consumer.project_id)
    .join(User, User.id == Consumer.user_id)
    .outerjoin(ConsumerType, ConsumerType.id == Consumer.consumer_type_id)
    .join(ResourceProvider, ResourceProvider.id == Allocation.resource_provider_id)
    .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
    .where(Consumer.uuid == bindparam("consumer_uuid"))
    .order_by(ResourceProvider.id, ResourceClass.id)
)


async def for_consumer(session: AsyncSession, consumer_uuid: str) -> ConsumerAllocations | None:
    """The consumer's allocations, or None when it holds nothing."""
    rows = await _FOR_CONSUMER.rows(session, consumer_uuid=consumer_uuid)
    if not rows:
        return None
    generation, project_id, user_id, consumer_type = rows[0][:4]
    result = ConsumerAllocations(
        uuid=consumer_uuid,
        project_id=project_id,
        user_id=user_id,
        generation=generation,
        consumer_type=consumer_type,
    )
    for *_, provider_uuid, provider_generation, resource_class, used, created, updated in rows:
        share = result.providers.get(provider_uuid)
        if share is None:
            share = result.providers[provider_uuid] = ProviderShare(provider_generation)
        share.resources[resource_class] = used
        result.last_modified = newest(result.last_modified, created, updated)
    return result


async def for_provider(session: AsyncSession, provider_id: int) -> ProviderAllocations:
    query = (
        select(
            Consumer.uuid,
            Consumer.generation,
            ResourceClass.name.label("resource_class"),
            Allocation.used,
            Allocation.created_at,
            Allocation.updated_at,
        )
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .where(Allocation.resource_provider_id == provider_id)
        .order_by(Consumer.uuid, ResourceClass.id)
    )
    result = ProviderAllocations()
    for row in await session.execute(query):
        share = result.consumers.setdefault(row.uuid, ConsumerShare(row.generation))
        share.resources[row.resource_class] = row.used
        result.last_modified = newest(result.last_modified, row.created_at, row.updated_at)
    return result
