"""The whole state of a Placement database, in a form neither schema owns.

Resource classes and traits are named; every other reference is the id of
the row in the database it was read from, which the writers keep.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from placement_api.domain.capacity import InventoryLimits, fits


class ProviderRow(NamedTuple):
    id: int
    uuid: str
    name: str
    generation: int
    root_id: int
    parent_id: int | None


class InventoryRow(NamedTuple):
    provider_id: int
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float


class ConsumerRow(NamedTuple):
    id: int
    uuid: str
    project_id: int
    user_id: int
    consumer_type_id: int | None
    generation: int


class AllocationRow(NamedTuple):
    provider_id: int
    consumer_id: int
    resource_class: str
    used: int


class OverCapacity(NamedTuple):
    """An inventory its allocations exceed."""

    provider_uuid: str
    resource_class: str
    used: int
    capacity: float


@dataclass
class Snapshot:
    resource_classes: list[str] = field(default_factory=list)
    traits: list[str] = field(default_factory=list)
    providers: list[ProviderRow] = field(default_factory=list)
    inventories: list[InventoryRow] = field(default_factory=list)
    aggregates: dict[int, str] = field(default_factory=dict)
    provider_aggregates: list[tuple[int, int]] = field(default_factory=list)
    provider_traits: list[tuple[int, str]] = field(default_factory=list)
    projects: dict[int, str] = field(default_factory=dict)
    users: dict[int, str] = field(default_factory=dict)
    consumer_types: dict[int, str] = field(default_factory=dict)
    consumers: list[ConsumerRow] = field(default_factory=list)
    allocations: list[AllocationRow] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Rows per kind, in the order they are written."""
        return {
            "resource classes": len(self.resource_classes),
            "traits": len(self.traits),
            "providers": len(self.providers),
            "inventories": len(self.inventories),
            "aggregates": len(self.aggregates),
            "provider aggregates": len(self.provider_aggregates),
            "provider traits": len(self.provider_traits),
            "projects": len(self.projects),
            "users": len(self.users),
            "consumer types": len(self.consumer_types),
            "consumers": len(self.consumers),
            "allocations": len(self.allocations),
        }

    def usage_by_class(self) -> dict[str, int]:
        """Sum of allocated amounts per resource class: what the writers check against."""
        usage: Counter[str] = Counter()
        for allocation in self.allocations:
            usage[allocation.resource_class] += allocation.used
        return dict(usage)

    def over_capacity(self) -> list[OverCapacity]:
        """Inventories whose allocations exceed ``(total - reserved) *
        allocation_ratio``: left by claims that raced past upstream's check,
        or by a total or ratio lowered under its usage. They move as they are."""
        usage: Counter[tuple[int, str]] = Counter()
        for allocation in self.allocations:
            usage[allocation.provider_id, allocation.resource_class] += allocation.used
        uuids = {provider.id: provider.uuid for provider in self.providers}
        found = []
        for inventory in self.inventories:
            limits = InventoryLimits(
                total=inventory.total,
                reserved=inventory.reserved,
                min_unit=inventory.min_unit,
                max_unit=inventory.max_unit,
                step_size=inventory.step_size,
                allocation_ratio=inventory.allocation_ratio,
            )
            used = usage[inventory.provider_id, inventory.resource_class]
            if not fits(limits, used):
                uuid = uuids.get(inventory.provider_id, f"id={inventory.provider_id}")
                found.append(OverCapacity(uuid, inventory.resource_class, used, limits.capacity))
        return sorted(found)


def parents_first(providers: list[ProviderRow]) -> list[ProviderRow]:
    """Providers ordered so that each comes after its parent and root, as
    foreign keys checked row by row require. Assumes the tree has no cycle."""
    by_id = {provider.id: provider for provider in providers}
    depth: dict[int, int] = {}

    def depth_of(provider: ProviderRow) -> int:
        chain = []
        current: ProviderRow | None = provider
        while current is not None and current.id not in depth:
            chain.append(current)
            current = by_id.get(current.parent_id) if current.parent_id is not None else None
        base = depth[current.id] if current is not None else -1
        for offset, item in enumerate(reversed(chain), start=1):
            depth[item.id] = base + offset
        return depth[provider.id]

    return sorted(providers, key=depth_of)
