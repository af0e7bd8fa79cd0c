"""From host facts and configuration to the providers, inventory and traits to report."""

from __future__ import annotations

import functools
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from agent.devices import device_child_uuid, device_offers
from agent.discovery.cpu_traits import arch_trait, cpu_feature_traits
from agent.discovery.model import HostFacts, NumaCell
from agent.provider_config import CustomInventory, ProviderConfig, ProviderConfigError
from agent.settings import AgentSettings
from flavors.cpu_set import format_cpu_set
from flavors.resource_names import hugepage_class

VCPU = "VCPU"
PCPU = "PCPU"
MEMORY_MB = "MEMORY_MB"
DISK_GB = "DISK_GB"
NUMA_ROOT_TRAIT = "HW_NUMA_ROOT"
COMPUTE_NODE_TRAIT = "COMPUTE_NODE"
HYPERTHREADING_TRAIT = "HW_CPU_HYPERTHREADING"
# Standard traits the agent derives itself and so may also take away.
DERIVED_TRAIT_PREFIXES = ("HW_CPU_X86_", "HW_ARCH_", HYPERTHREADING_TRAIT)
# The classes whose allocation ratio is configurable, and the option that sets it.
_RATIO_OPTIONS = {
    VCPU: "cpu_allocation_ratio",
    MEMORY_MB: "ram_allocation_ratio",
    DISK_GB: "disk_allocation_ratio",
}
_PCI_ADDRESS_SUFFIX = re.compile(r"_([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$")
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


def owns_child(root_uuid: str, child_uuid: str, child_name: str) -> bool:
    """The ownership rule of children under the root: a NUMA cell's uuid, or a device's
    derived from the PCI address that ends its name. Derived, not remembered, so it
    holds after a lost state directory or a rename."""
    return child_uuid in _numa_child_uuids(root_uuid) or is_device_child(
        root_uuid, child_uuid, child_name
    )


def is_device_child(root_uuid: str, child_uuid: str, child_name: str) -> bool:
    """A PCI device or GPU of the agent's: its uuid derived from the address ending its name."""
    address = _PCI_ADDRESS_SUFFIX.search(child_name)
    return address is not None and device_child_uuid(root_uuid, address[1]) == child_uuid


@functools.lru_cache(maxsize=64)
def _numa_child_uuids(root_uuid: str) -> frozenset[str]:
    return frozenset(numa_child_uuid(root_uuid, cell_id) for cell_id in range(MAX_NUMA_NODES))


class HostPlanError(ValueError):
    """The configuration does not fit the host (a CPU set naming CPUs it lacks)."""


def build_host_plan(
    facts: HostFacts,
    settings: AgentSettings,
    provider_config: ProviderConfig,
    root_uuid: str,
    root_name: str,
) -> HostPlan:
    cells = facts.numa_cells if settings.numa_providers else ()
    shared, dedicated = cpu_split(facts, settings)
    standard = {DISK_GB: _disk_record(facts, settings)}
    if not cells:
        memory = facts.memory_mib - sum(s * n for s, n in facts.huge_pages.items()) // 1024
        standard |= _compute_records(
            len(shared), len(dedicated), memory, facts.huge_pages, settings,
            reserved_cpus=settings.reserved_host_cpus,
            reserved_memory=settings.reserved_host_memory_mb,
            reserved_pages=settings.reserved_pages(None),
        )  # fmt: skip
    root = _plan_provider(
        root_uuid, root_name, None, standard, _root_traits(facts), provider_config, settings
    )
    children = [
        _plan_provider(
            numa_child_uuid(root_uuid, cell.cell_id),
            f"{root_name}_NUMA{cell.cell_id}",
            root_uuid,
            inventory,
            frozenset({NUMA_ROOT_TRAIT}),
            provider_config,
            settings,
        )
        for cell, inventory in zip(
            cells, _numa_inventories(cells, shared, dedicated, settings), strict=True
        )
    ]
    offers = device_offers(
        facts, settings.pci_device_spec, settings.enabled_mdev_types, settings.mdev_classes
    )
    for offer in offers:
        record = InventoryRecord(total=offer.total, max_unit=offer.total)
        children.append(
            _plan_provider(
                device_child_uuid(root_uuid, offer.address),
                f"{root_name}_{offer.address}",
                root_uuid,
                {offer.resource_class: record},
                frozenset(),
                provider_config,
                settings,
                spec_traits=offer.traits,
            )
        )
    return HostPlan(root=root, children=tuple(children))


def cpu_split(facts: HostFacts, settings: AgentSettings) -> tuple[frozenset[int], frozenset[int]]:
    """(shared, dedicated) host CPUs, as Nova reads cpu_shared_set and cpu_dedicated_set."""
    host = facts.cpu_ids
    dedicated = settings.dedicated_cpus()
    shared = settings.shared_cpus()
    if shared is None:
        shared = frozenset() if settings.cpu_dedicated_set is not None else host
    for option, cpus in (("cpu_dedicated_set", dedicated), ("cpu_shared_set", shared)):
        if missing := cpus - host:
            raise HostPlanError(
                f"{option} names CPUs {format_cpu_set(missing)} that the host does not have "
                f"(it has {format_cpu_set(host)})"
            )
    return shared, dedicated


def _plan_provider(
    provider_uuid: str,
    name: str,
    parent_uuid: str | None,
    standard: dict[str, InventoryRecord],
    derived_traits: frozenset[str],
    provider_config: ProviderConfig,
    settings: AgentSettings,
    spec_traits: frozenset[str] = frozenset(),
) -> ProviderPlan:
    """``spec_traits``: from the device allowlist; remembered like the provider config's,
    so a trait taken out of either is removed."""
    is_root = parent_uuid is None
    custom = provider_config.custom_inventory_for(provider_uuid, name, is_root)
    reported = {rc for rc, record in standard.items() if record.total > 0}
    if clash := sorted(custom.keys() & reported):
        raise ProviderConfigError(
            f"the provider config gives provider {name} {', '.join(clash)}, which the agent "
            "reports itself from the host; leave those to the agent"
        )
    config_traits = provider_config.custom_traits_for(provider_uuid, name, is_root) | spec_traits
    # A class the host has none of (PCPU without cpu_dedicated_set) may be declared by hand.
    inventories = {**standard, **{rc: _custom_record(inv) for rc, inv in custom.items()}}
    return ProviderPlan(
        uuid=provider_uuid,
        name=name,
        parent_uuid=parent_uuid,
        inventories={rc: record for rc, record in inventories.items() if record.total > 0},
        traits=derived_traits | config_traits,
        server_ratio_classes=frozenset(
            rc for rc in reported if rc in _RATIO_OPTIONS and _ratio(rc, settings) is None
        ),
        config_traits=config_traits,
    )


def _root_traits(facts: HostFacts) -> frozenset[str]:
    traits = set(cpu_feature_traits(facts.arch, facts.cpu_features))
    if (arch := arch_trait(facts.arch)) is not None:
        traits.add(arch)
    if facts.smt:
        traits.add(HYPERTHREADING_TRAIT)
    traits.add(COMPUTE_NODE_TRAIT)
    return frozenset(traits)


def _disk_record(facts: HostFacts, settings: AgentSettings) -> InventoryRecord:
    reserved_disk_gb = math.ceil(settings.reserved_host_disk_mb / _MB_PER_GB)
    return _standard_record(DISK_GB, facts.disk_gib, reserved_disk_gb, settings)


def _compute_records(
    shared: int,
    dedicated: int,
    memory_mib: int,
    huge_pages: Mapping[int, int],
    settings: AgentSettings,
    reserved_cpus: int,
    reserved_memory: int,
    reserved_pages: Mapping[int, int],
) -> dict[str, InventoryRecord]:
    """VCPU, PCPU (never overcommitted, as Nova), MEMORY_MB in base pages, and
    each huge page size as MiB with a step of one page (``reserved_pages``: size
    KiB -> pages kept for the host)."""
    records = {
        VCPU: _standard_record(VCPU, shared, reserved_cpus, settings),
        PCPU: InventoryRecord(total=dedicated, max_unit=dedicated),
        MEMORY_MB: _standard_record(MEMORY_MB, memory_mib, reserved_memory, settings),
    }
    for size_kib, count in sorted(huge_pages.items()):
        total = size_kib * count // 1024
        reserved = min(size_kib * reserved_pages.get(size_kib, 0) // 1024, total)
        step = max(size_kib // 1024, 1)
        records[hugepage_class(size_kib)] = InventoryRecord(
            total=total, reserved=reserved, max_unit=total, step_size=step
        )
    return records


def _numa_inventories(
    cells: tuple[NumaCell, ...],
    shared: frozenset[int],
    dedicated: frozenset[int],
    settings: AgentSettings,
) -> list[dict[str, InventoryRecord]]:
    """Reserved CPUs and memory are taken from the lowest cells first."""
    shared_counts = [len(shared & set(cell.cpu_ids)) for cell in cells]
    memories = [cell.memory_mib - cell.huge_page_mib for cell in cells]
    cpu_reserve = _spread(settings.reserved_host_cpus, shared_counts)
    memory_reserve = _spread(settings.reserved_host_memory_mb, memories)
    return [
        _compute_records(
            shared_count,
            len(dedicated & set(cell.cpu_ids)),
            memory,
            dict(cell.huge_pages),
            settings,
            reserved_cpus=cpus,
            reserved_memory=reserved,
            reserved_pages=settings.reserved_pages(cell.cell_id),
        )
        for cell, shared_count, memory, cpus, reserved in zip(
            cells, shared_counts, memories, cpu_reserve, memory_reserve, strict=True
        )
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
    ratio: float | None = getattr(settings, _RATIO_OPTIONS[resource_class])
    return ratio


def _initial_ratio(resource_class: str, settings: AgentSettings) -> float:
    ratio: float = getattr(settings, f"initial_{_RATIO_OPTIONS[resource_class]}")
    return ratio


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
