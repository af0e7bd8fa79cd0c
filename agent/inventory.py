"""From host facts and configuration to the providers, inventory and traits to report."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from agent.discovery.cpu_traits import arch_trait, cpu_feature_traits
from agent.discovery.model import HostFacts, NumaCell
from agent.provider_config import CustomInventory, ProviderConfig
from agent.settings import AgentSettings

VCPU = "VCPU"
MEMORY_MB = "MEMORY_MB"
DISK_GB = "DISK_GB"
NUMA_ROOT_TRAIT = "HW_NUMA_ROOT"
COMPUTE_NODE_TRAIT = "COMPUTE_NODE"
# Standard traits the agent derives itself and so may also take away.
DERIVED_TRAIT_PREFIXES = ("HW_CPU_X86_", "HW_ARCH_")
_MB_PER_GB = 1024
# Linux numbers NUMA nodes below 1 << CONFIG_NODES_SHIFT, and that shift is at most 10.
MAX_NUMA_NODES = 1024


@dataclass(frozen=True)
class InventoryRecord:
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 0
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        return math.floor((self.total - self.reserved) * self.allocation_ratio)

    def same_as(self, other: InventoryRecord) -> bool:
        """Equal, with the ratio compared as the float it became on the server."""
        return replace(self, allocation_ratio=0.0) == replace(
            other, allocation_ratio=0.0
        ) and math.isclose(self.allocation_ratio, other.allocation_ratio, rel_tol=1e-6)


@dataclass(frozen=True)
class ProviderPlan:
    uuid: str
    name: str
    parent_uuid: str | None
    inventories: Mapping[str, InventoryRecord]
    traits: frozenset[str]
    # Classes whose ratio the agent's config does not set: an operator's value on
    # the server wins over the initial ratio in ``inventories``.
    server_ratio_classes: frozenset[str] = field(default=frozenset())
    # Custom traits from the provider config; remembered so a trait taken out of
    # the config is removed without touching custom traits set by others.
    config_traits: frozenset[str] = field(default=frozenset())


@dataclass(frozen=True)
class HostPlan:
    root: ProviderPlan
    children: tuple[ProviderPlan, ...]

    @property
    def providers(self) -> tuple[ProviderPlan, ...]:
        return (self.root, *self.children)


def numa_child_uuid(root_uuid: str, cell_id: int) -> str:
    """Stable without extra state: derived from the root uuid and the cell id."""
    return str(uuid.uuid5(uuid.UUID(root_uuid), f"numa-cell-{cell_id}"))


def owned_child_uuids(root_uuid: str) -> frozenset[str]:
    """Every child uuid this agent can ever report under the root: its ownership rule.
    Derived, not remembered, so it holds after a lost state directory or a rename."""
    return frozenset(numa_child_uuid(root_uuid, cell_id) for cell_id in range(MAX_NUMA_NODES))


def build_host_plan(
    facts: HostFacts,
    settings: AgentSettings,
    provider_config: ProviderConfig,
    root_uuid: str,
    root_name: str,
) -> HostPlan:
    cells = facts.numa_cells if settings.numa_providers else ()
    standard = _root_standard_inventory(facts, settings, with_cpu_and_memory=not cells)
    root = _plan_provider(
        root_uuid, root_name, None, standard, _root_traits(facts), provider_config, settings
    )
    children = tuple(
        _plan_provider(
            numa_child_uuid(root_uuid, cell.cell_id),
            f"{root_name}_NUMA{cell.cell_id}",
            root_uuid,
            inventory,
            frozenset({NUMA_ROOT_TRAIT}),
            provider_config,
            settings,
        )
        for cell, inventory in zip(cells, _numa_inventories(cells, settings), strict=True)
    )
    return HostPlan(root=root, children=children)


def _plan_provider(
    provider_uuid: str,
    name: str,
    parent_uuid: str | None,
    standard: dict[str, InventoryRecord],
    derived_traits: frozenset[str],
    provider_config: ProviderConfig,
    settings: AgentSettings,
) -> ProviderPlan:
    is_root = parent_uuid is None
    custom = provider_config.custom_inventory_for(provider_uuid, name, is_root)
    config_traits = provider_config.custom_traits_for(provider_uuid, name, is_root)
    inventories = {**standard, **{rc: _custom_record(inv) for rc, inv in custom.items()}}
    return ProviderPlan(
        uuid=provider_uuid,
        name=name,
        parent_uuid=parent_uuid,
        inventories={rc: record for rc, record in inventories.items() if record.total > 0},
        traits=derived_traits | config_traits,
        server_ratio_classes=frozenset(rc for rc in standard if _ratio(rc, settings) is None),
        config_traits=config_traits,
    )


def _root_traits(facts: HostFacts) -> frozenset[str]:
    traits = set(cpu_feature_traits(facts.arch, facts.cpu_features))
    if (arch := arch_trait(facts.arch)) is not None:
        traits.add(arch)
    traits.add(COMPUTE_NODE_TRAIT)
    return frozenset(traits)


def _root_standard_inventory(
    facts: HostFacts, settings: AgentSettings, with_cpu_and_memory: bool
) -> dict[str, InventoryRecord]:
    reserved_disk_gb = math.ceil(settings.reserved_host_disk_mb / _MB_PER_GB)
    inventory = {DISK_GB: _standard_record(DISK_GB, facts.disk_gib, reserved_disk_gb, settings)}
    if with_cpu_and_memory:
        inventory[VCPU] = _standard_record(
            VCPU, facts.logical_cpus, settings.reserved_host_cpus, settings
        )
        inventory[MEMORY_MB] = _standard_record(
            MEMORY_MB, facts.memory_mib, settings.reserved_host_memory_mb, settings
        )
    return inventory


def _numa_inventories(
    cells: tuple[NumaCell, ...], settings: AgentSettings
) -> list[dict[str, InventoryRecord]]:
    """Reserved CPUs and memory are taken from the lowest cells first."""
    cpu_reserve = _spread(settings.reserved_host_cpus, (len(cell.cpu_ids) for cell in cells))
    memory_reserve = _spread(settings.reserved_host_memory_mb, (cell.memory_mib for cell in cells))
    return [
        {
            VCPU: _standard_record(VCPU, len(cell.cpu_ids), cpus, settings),
            MEMORY_MB: _standard_record(MEMORY_MB, cell.memory_mib, memory, settings),
        }
        for cell, cpus, memory in zip(cells, cpu_reserve, memory_reserve, strict=True)
    ]


def _spread(amount: int, sizes: Iterable[int]) -> list[int]:
    shares = []
    for size in sizes:
        share = min(amount, size)
        shares.append(share)
        amount -= share
    return shares


def _standard_record(
    resource_class: str, total: int, reserved: int, settings: AgentSettings
) -> InventoryRecord:
    ratio = _ratio(resource_class, settings) or _initial_ratio(resource_class, settings)
    # The API refuses reserved > total; a host smaller than its reservation has
    # nothing to offer, which reserved == total says honestly.
    return InventoryRecord(
        total=total,
        reserved=min(reserved, total),
        max_unit=total,
        allocation_ratio=ratio,
    )


def _custom_record(inventory: CustomInventory) -> InventoryRecord:
    return InventoryRecord(
        total=inventory.total,
        reserved=inventory.reserved,
        min_unit=inventory.min_unit,
        max_unit=inventory.max_unit if inventory.max_unit is not None else inventory.total,
        step_size=inventory.step_size,
        allocation_ratio=inventory.allocation_ratio,
    )


def _ratio(resource_class: str, settings: AgentSettings) -> float | None:
    configured = {
        VCPU: settings.cpu_allocation_ratio,
        MEMORY_MB: settings.ram_allocation_ratio,
        DISK_GB: settings.disk_allocation_ratio,
    }
    return configured[resource_class]


def _initial_ratio(resource_class: str, settings: AgentSettings) -> float:
    initial = {
        VCPU: settings.initial_cpu_allocation_ratio,
        MEMORY_MB: settings.initial_ram_allocation_ratio,
        DISK_GB: settings.initial_disk_allocation_ratio,
    }
    return initial[resource_class]


def resolve_inventories(
    plan: ProviderPlan, current: Mapping[str, InventoryRecord]
) -> dict[str, InventoryRecord]:
    """The inventory to write, given what the server holds now."""
    resolved = dict(plan.inventories)
    for resource_class in plan.server_ratio_classes & resolved.keys() & current.keys():
        resolved[resource_class] = replace(
            resolved[resource_class], allocation_ratio=current[resource_class].allocation_ratio
        )
    return resolved


def resolve_traits(
    plan: ProviderPlan, current: frozenset[str], previously_configured: frozenset[str]
) -> frozenset[str]:
    """Add what the agent wants; remove only traits the agent itself is responsible for."""
    owned = {t for t in current if t.startswith(DERIVED_TRAIT_PREFIXES)} | previously_configured
    return (current - (owned - plan.traits)) | plan.traits


def inventories_equal(
    left: Mapping[str, InventoryRecord], right: Mapping[str, InventoryRecord]
) -> bool:
    return left.keys() == right.keys() and all(left[rc].same_as(right[rc]) for rc in left)
