"""Every inventory with its provider's and class's names: the capacity gauges."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import Inventory, ResourceClass, ResourceProvider


@dataclass(frozen=True)
class InventoryFigures:
    """One inventory row: what the capacity gauges are made of."""

    hostname: str
    resource_class: str
    total: int
    reserved: int
    used: int
    allocation_ratio: float
    generation: int  # the provider's


async def inventory_figures(session: AsyncSession) -> list[InventoryFigures]:
    """One row per inventory, from ``inventories.used``: no allocation is read."""
    statement = (
        select(
            ResourceProvider.name,
            ResourceClass.name,
            Inventory.total,
            Inventory.reserved,
            Inventory.used,
            Inventory.allocation_ratio,
            ResourceProvider.generation,
        )
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .order_by(ResourceProvider.name, ResourceClass.name)
    )
    rows = await session.execute(statement)
    return [
        InventoryFigures(
            hostname=host,
            resource_class=resource_class,
            total=total,
            reserved=reserved,
            used=used,
            allocation_ratio=ratio,
            generation=generation,
        )
        for host, resource_class, total, reserved, used, ratio, generation in rows
    ]
