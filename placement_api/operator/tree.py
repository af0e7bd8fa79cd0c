"""``placement-api tree [HOST]``: providers as trees, with capacity, usage and traits."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.engine import create_engine
from placement_api.db.models import Inventory, ProviderTrait, ResourceClass, Trait
from placement_api.db.session import unit_of_work
from placement_api.domain import providers
from placement_api.domain.changes import recording_session_factory
from placement_api.operator.hosts import DISABLED_TRAIT, find_host


@dataclass(frozen=True)
class ClassFigures:
    capacity: int
    used: int


@dataclass
class ProviderNode:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    resources: dict[str, ClassFigures] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    children: list[ProviderNode] = field(default_factory=list)

    @property
    def disabled(self) -> bool:
        return DISABLED_TRAIT in self.traits


async def read_trees(database_url: str, host: str | None) -> list[ProviderNode]:
    """Every root with its descendants (or only ``host``'s tree), children by name."""
    engine = create_engine(database_url, pool_size=1)
    try:
        async with unit_of_work(recording_session_factory(engine), write=False) as session:
            return await _trees(session, host)
    finally:
        await engine.dispose()


async def _trees(session: AsyncSession, host: str | None) -> list[ProviderNode]:
    query = providers.ProviderQuery()
    if host is not None:
        query = providers.ProviderQuery(in_tree=(await find_host(session, host)).uuid)
    records = await providers.list_providers(session, query)
    by_id = {
        record.id: ProviderNode(record.uuid, record.name, record.generation, record.parent_uuid)
        for record in records
    }
    await _add_inventories(session, by_id)
    await _add_traits(session, by_id)
    by_uuid = {node.uuid: node for node in by_id.values()}
    roots: list[ProviderNode] = []
    for node in sorted(by_id.values(), key=lambda n: n.name):
        parent = by_uuid.get(node.parent_uuid) if node.parent_uuid else None
        (parent.children if parent else roots).append(node)
    return roots


async def _add_inventories(session: AsyncSession, by_id: dict[int, ProviderNode]) -> None:
    rows = await session.execute(
        select(
            Inventory.resource_provider_id,
            ResourceClass.name,
            Inventory.total,
            Inventory.reserved,
            Inventory.allocation_ratio,
            Inventory.used,
        )
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(Inventory.resource_provider_id.in_(by_id))
        .order_by(ResourceClass.name)
    )
    for provider_id, name, total, reserved, ratio, used in rows:
        # The capacity rule's figure (domain/capacity.py), whole units as upstream shows them.
        capacity = int((total - reserved) * ratio)
        by_id[provider_id].resources[name] = ClassFigures(capacity, int(used))


async def _add_traits(session: AsyncSession, by_id: dict[int, ProviderNode]) -> None:
    rows = await session.execute(
        select(ProviderTrait.resource_provider_id, Trait.name)
        .join(Trait, Trait.id == ProviderTrait.trait_id)
        .where(ProviderTrait.resource_provider_id.in_(by_id))
        .order_by(Trait.name)
    )
    for provider_id, name in rows:
        by_id[provider_id].traits.append(name)
