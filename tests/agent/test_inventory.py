"""Host facts plus configuration become the inventory and traits the agent reports."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent.discovery.capabilities import parse_capabilities
from agent.discovery.model import CpuTopology, HostFacts, HostUsage
from agent.inventory import (
    InventoryRecord,
    build_host_plan,
    inventories_equal,
    numa_child_uuid,
    resolve_inventories,
    resolve_traits,
)
from agent.provider_config import EMPTY_PROVIDER_CONFIG, ProviderConfig
from agent.settings import AgentSettings
from tests.agent.nodes import DATA

ROOT = "7a3c1d2e-0000-4000-8000-000000000001"


def facts(**changes: Any) -> HostFacts:
    values: dict[str, Any] = {
        "hostname": "compute-1",
        "arch": "x86_64",
        "logical_cpus": 8,
        "memory_mib": 16384,
        "disk_gib": 100,
        "cpu_model": "Haswell",
        "cpu_features": frozenset({"avx2", "sse4.2", "aes"}),
        "topology": CpuTopology(sockets=1, cores=4, threads=2, numa_nodes=1),
        "numa_cells": (),
        "usage": HostUsage(read_at=0.0, cpu_times_ns=None, memory_kib=None),
    }
    return HostFacts(**(values | changes))


def settings(**changes) -> AgentSettings:
    return AgentSettings(**changes)


def plan(host: HostFacts | None = None, config: ProviderConfig = EMPTY_PROVIDER_CONFIG, **kw):
    return build_host_plan(host or facts(), settings(**kw), config, ROOT, "compute-1")


def test_root_reports_vcpu_memory_and_disk_with_nova_initial_ratios():
    inventories = plan().root.inventories

    assert inventories["VCPU"] == InventoryRecord(8, 0, 1, 8, 1, 4.0)
    assert inventories["MEMORY_MB"] == InventoryRecord(16384, 512, 1, 16384, 1, 1.0)
    assert inventories["DISK_GB"] == InventoryRecord(100, 0, 1, 100, 1, 1.0)


def test_reserved_amounts_apply_and_disk_reservation_rounds_up_to_whole_gb():
    inventories = plan(
        reserved_host_cpus=2, reserved_host_memory_mb=2048, reserved_host_disk_mb=20481
    ).root.inventories

    assert inventories["VCPU"].reserved == 2
    assert inventories["MEMORY_MB"].reserved == 2048
    assert inventories["DISK_GB"].reserved == 21


def test_reservation_larger_than_the_host_reserves_everything_not_more():
    inventories = plan(facts(memory_mib=256), reserved_host_memory_mb=512).root.inventories

    assert inventories["MEMORY_MB"].reserved == 256
    assert inventories["MEMORY_MB"].capacity == 0


def test_configured_ratios_replace_initial_ones():
    inventories = plan(cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5).root.inventories

    assert inventories["VCPU"].allocation_ratio == 16.0
    assert inventories["MEMORY_MB"].allocation_ratio == 1.5
    assert inventories["VCPU"].capacity == 128


def test_class_with_total_zero_is_never_reported():
    assert "DISK_GB" not in plan(facts(disk_gib=0)).root.inventories


def test_root_traits_are_cpu_features_arch_and_compute_node():
    traits = plan().root.traits

    assert traits == {
        "HW_CPU_X86_AVX2",
        "HW_CPU_X86_SSE42",
        "HW_CPU_X86_AESNI",
        "HW_ARCH_X86_64",
        "COMPUTE_NODE",
    }


def test_operator_ratio_on_the_server_is_kept_when_config_sets_none():
    provider = plan().root
    current = {"VCPU": InventoryRecord(8, 0, 1, 8, 1, 2.5)}

    resolved = resolve_inventories(provider, current)

    assert resolved["VCPU"].allocation_ratio == 2.5
    assert resolved["MEMORY_MB"].allocation_ratio == 1.0


def test_ratio_in_agent_config_overrides_the_server_ratio():
    provider = plan(cpu_allocation_ratio=8.0).root
    current = {"VCPU": InventoryRecord(8, 0, 1, 8, 1, 2.5)}

    assert resolve_inventories(provider, current)["VCPU"].allocation_ratio == 8.0


def test_inventories_compare_ratios_as_floats_that_went_through_json():
    left = {"VCPU": InventoryRecord(8, 0, 1, 8, 1, 1.1)}
    right = {"VCPU": InventoryRecord(8, 0, 1, 8, 1, 1.1000000000000001)}

    assert inventories_equal(left, right)
    assert not inventories_equal(left, {"VCPU": InventoryRecord(9, 0, 1, 8, 1, 1.1)})
    assert not inventories_equal(left, {})


def test_traits_set_by_others_are_preserved_and_stale_derived_ones_removed():
    provider = plan().root
    current = frozenset(
        {"CUSTOM_RACK_A", "HW_CPU_X86_AVX512F", "HW_ARCH_X86_64", "COMPUTE_STATUS_DISABLED"}
    )

    wanted = resolve_traits(provider, current, previously_configured=frozenset())

    assert "CUSTOM_RACK_A" in wanted
    assert "COMPUTE_STATUS_DISABLED" in wanted
    assert "HW_CPU_X86_AVX512F" not in wanted
    assert provider.traits <= wanted


def test_custom_trait_dropped_from_the_config_is_removed_others_stay():
    provider = plan().root
    current = frozenset({"CUSTOM_FROM_CONFIG", "CUSTOM_FROM_OPERATOR"})

    wanted = resolve_traits(
        provider, current, previously_configured=frozenset({"CUSTOM_FROM_CONFIG"})
    )

    assert "CUSTOM_FROM_CONFIG" not in wanted
    assert "CUSTOM_FROM_OPERATOR" in wanted


def provider_config(document: dict[str, Any]) -> ProviderConfig:
    return ProviderConfig.model_validate({"meta": {"schema_version": "1.0"}} | document)


def test_provider_config_adds_custom_inventory_and_traits_to_the_root():
    config = provider_config(
        {
            "providers": [
                {
                    "identification": {"uuid": "$COMPUTE_NODE"},
                    "inventories": {"additional": [{"CUSTOM_FPGA": {"total": 4, "max_unit": 2}}]},
                    "traits": {"additional": ["CUSTOM_FAST_STORAGE"]},
                }
            ]
        }
    )

    root = plan(config=config).root

    assert root.inventories["CUSTOM_FPGA"] == InventoryRecord(4, 0, 1, 2, 1, 1.0)
    assert "CUSTOM_FAST_STORAGE" in root.traits
    assert root.config_traits == {"CUSTOM_FAST_STORAGE"}
    assert "VCPU" in root.inventories


def test_provider_config_entry_for_another_provider_is_ignored():
    config = provider_config(
        {
            "providers": [
                {
                    "identification": {"name": "some-other-host"},
                    "traits": {"additional": ["CUSTOM_ELSEWHERE"]},
                }
            ]
        }
    )

    assert "CUSTOM_ELSEWHERE" not in plan(config=config).root.traits


def two_cell_facts() -> HostFacts:
    cells = parse_capabilities((DATA / "capabilities-two-cells.xml").read_text()).numa_cells
    return facts(logical_cpus=4, memory_mib=24576, numa_cells=cells)


def test_numa_cells_stay_on_the_root_unless_enabled():
    host_plan = plan(two_cell_facts())

    assert host_plan.children == ()
    assert host_plan.root.inventories["VCPU"].total == 4


def test_numa_cells_become_children_with_vcpu_and_memory_when_enabled():
    host_plan = plan(two_cell_facts(), numa_providers=True, reserved_host_memory_mb=512)

    assert set(host_plan.root.inventories) == {"DISK_GB"}
    first, second = host_plan.children
    assert first.name == "compute-1_NUMA0"
    assert first.parent_uuid == ROOT
    assert first.uuid == numa_child_uuid(ROOT, 0)
    assert first.traits == {"HW_NUMA_ROOT"}
    assert first.inventories["VCPU"].total == 2
    assert first.inventories["MEMORY_MB"] == InventoryRecord(16384, 512, 1, 16384, 1, 1.0)
    assert second.inventories["MEMORY_MB"].reserved == 0


def test_reservation_spills_over_to_the_next_cell():
    host_plan = plan(two_cell_facts(), numa_providers=True, reserved_host_cpus=3)

    assert [c.inventories["VCPU"].reserved for c in host_plan.children] == [2, 1]


def test_numa_child_uuids_are_stable_and_distinct():
    assert numa_child_uuid(ROOT, 0) == numa_child_uuid(ROOT, 0)
    assert numa_child_uuid(ROOT, 0) != numa_child_uuid(ROOT, 1)
    assert uuid.UUID(numa_child_uuid(ROOT, 1))


@pytest.mark.parametrize("ratio", [0, -1.0])
def test_non_positive_ratios_are_rejected(ratio):
    with pytest.raises(ValueError, match="greater than 0"):
        settings(cpu_allocation_ratio=ratio)
