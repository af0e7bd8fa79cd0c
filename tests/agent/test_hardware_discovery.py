"""Recorded host descriptions (libvirt's capabilities and node-device formats) become
PCPU/VCPU per cell, huge pages, PCI device and vGPU providers."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent.discovery import build_host_facts, read_host
from agent.discovery.capabilities import parse_capabilities
from agent.discovery.node_devices import parse_node_devices
from agent.inventory import HostPlanError, build_host_plan, owns_child
from agent.provider_config import EMPTY_PROVIDER_CONFIG, ProviderConfigError, load_provider_config
from agent.settings import AgentSettings
from flavors.cpu_set import CpuSetError, parse_cpu_set
from tests.agent.nodes import DATA, node_uri
from tests.agent.test_inventory import facts

ROOT = "7a3c1d2e-0000-4000-8000-000000000001"
FOUR_CELLS = parse_capabilities((DATA / "capabilities-four-cells.xml").read_text())
TWO_CELLS = parse_capabilities((DATA / "capabilities-two-cells.xml").read_text())
DEVICES = tuple(
    ET.tostring(device, encoding="unicode")
    for device in ET.parse(DATA / "node-devices.xml").getroot().findall("device")
)
NIC_SPEC = [{"vendor_id": "8086", "product_id": "154d", "traits": ["physnet_data"]}]


def plan(cells: Any = FOUR_CELLS.numa_cells, devices: tuple[str, ...] = (), **options: Any):
    pci, mdevs = parse_node_devices(devices)
    host = facts(logical_cpus=16, memory_mib=36864, numa_cells=cells, pci_devices=pci, mdevs=mdevs)
    return build_host_plan(host, AgentSettings(**options), EMPTY_PROVIDER_CONFIG, ROOT, "cn1")


def by_name(host_plan: Any) -> dict[str, Any]:
    return {p.name: p for p in host_plan.providers}


def totals(provider: Any) -> dict[str, int]:
    return {rc: record.total for rc, record in provider.inventories.items()}


def test_nova_cpu_set_syntax_includes_ranges_and_removes_exclusions():
    assert parse_cpu_set("0-3,8,^2", 16) == {0, 1, 3, 8}
    assert parse_cpu_set(" 4-5 , ^5", 16) == {4}
    for bad in ("0-", "a", "3-1", "0-99999999"):
        with pytest.raises(CpuSetError):
            parse_cpu_set(bad, 8192)


def test_four_cells_are_read_with_their_huge_pages_and_thread_siblings():
    cells = FOUR_CELLS.numa_cells
    assert [c.cpu_ids for c in cells] == [
        (0, 1, 2, 3),
        (4, 5, 6, 7),
        (8, 9, 10, 11),
        (12, 13, 14, 15),
    ]
    assert [c.huge_pages for c in cells] == [((2048, 1024),), ((2048, 512),), (), ((1048576, 2),)]
    assert all(c.smt for c in cells)
    assert not any(c.smt for c in TWO_CELLS.numa_cells)


def test_dedicated_and_shared_sets_become_pcpu_and_vcpu_per_cell():
    providers = by_name(
        plan(numa_providers=True, cpu_dedicated_set="2-3,6-7,8-15", cpu_shared_set="0-1,4-5")
    )
    assert totals(providers["cn1_NUMA0"]) == {
        "VCPU": 2, "PCPU": 2, "MEMORY_MB": 6144, "CUSTOM_HUGEPAGES_2MB": 2048,
    }  # fmt: skip
    assert totals(providers["cn1_NUMA1"]) == {
        "VCPU": 2, "PCPU": 2, "MEMORY_MB": 7168, "CUSTOM_HUGEPAGES_2MB": 1024,
    }  # fmt: skip
    assert totals(providers["cn1_NUMA2"]) == {"PCPU": 4, "MEMORY_MB": 16384}
    assert totals(providers["cn1_NUMA3"]) == {
        "PCPU": 4,
        "MEMORY_MB": 2048,
        "CUSTOM_HUGEPAGES_1GB": 2048,
    }
    assert providers["cn1_NUMA3"].inventories["CUSTOM_HUGEPAGES_1GB"].step_size == 1024
    assert providers["cn1_NUMA0"].inventories["PCPU"].allocation_ratio == 1.0
    assert "HW_NUMA_ROOT" in providers["cn1_NUMA0"].traits
    assert "HW_CPU_HYPERTHREADING" in providers["cn1"].traits
    assert totals(providers["cn1"]) == {"DISK_GB": 100}


def test_without_numa_providers_the_root_carries_pcpu_and_every_page_size():
    root = plan(cpu_dedicated_set="0-7").root
    # Without cpu_shared_set, Nova reports no VCPU once cpu_dedicated_set is given.
    assert totals(root) == {
        "PCPU": 8, "MEMORY_MB": 36864 - 3072 - 2048, "DISK_GB": 100,
        "CUSTOM_HUGEPAGES_2MB": 3072, "CUSTOM_HUGEPAGES_1GB": 2048,
    }  # fmt: skip


def test_two_recorded_cells_each_report_their_own_shared_and_dedicated_cpus():
    providers = by_name(
        plan(
            TWO_CELLS.numa_cells, numa_providers=True, cpu_shared_set="0,2", cpu_dedicated_set="1,3"
        )
    )
    assert totals(providers["cn1_NUMA0"]) == {"VCPU": 1, "PCPU": 1, "MEMORY_MB": 16384}
    assert totals(providers["cn1_NUMA1"]) == {"VCPU": 1, "PCPU": 1, "MEMORY_MB": 8192}
    assert "HW_CPU_HYPERTHREADING" not in providers["cn1"].traits


def test_reserved_huge_pages_are_reported_as_reserved_on_their_cell_or_summed_on_the_root():
    kept = [{"node": 0, "size": "2MB", "count": 64}, {"node": 1, "size": "2048", "count": 8}]
    cells = by_name(plan(numa_providers=True, reserved_huge_pages=kept))
    assert cells["cn1_NUMA0"].inventories["CUSTOM_HUGEPAGES_2MB"].reserved == 128
    assert cells["cn1_NUMA1"].inventories["CUSTOM_HUGEPAGES_2MB"].reserved == 16
    assert cells["cn1_NUMA3"].inventories["CUSTOM_HUGEPAGES_1GB"].reserved == 0
    root = plan(reserved_huge_pages=kept).root
    assert root.inventories["CUSTOM_HUGEPAGES_2MB"].reserved == 144
    with pytest.raises(ValidationError):
        AgentSettings(reserved_huge_pages=[{"node": 0, "size": "huge", "count": 1}])


def test_no_cpu_sets_means_every_host_cpu_is_vcpu():
    assert totals(plan(cells=TWO_CELLS.numa_cells).root)["VCPU"] == 4


def test_cpu_sets_naming_cpus_the_host_lacks_are_refused_with_both_sets():
    with pytest.raises(HostPlanError, match=r"cpu_dedicated_set names CPUs 16-17 .* has 0-15"):
        plan(cpu_dedicated_set="14-17")


def test_overlapping_cpu_sets_are_refused():
    with pytest.raises(ValidationError, match="CPUs 3 are in both"):
        AgentSettings(cpu_dedicated_set="2-3", cpu_shared_set="0,3")


def test_node_devices_give_functions_mdev_types_and_created_mdevs():
    pci, mdevs = parse_node_devices(DEVICES)
    nic = next(d for d in pci if d.address == "0000:81:00.0")
    assert (nic.vendor_id, nic.product_id, nic.numa_node, nic.is_network) == (
        "8086",
        "154d",
        1,
        True,
    )
    assert len(nic.vf_addresses) == 4
    vf = next(d for d in pci if d.address == "0000:81:10.2")
    assert vf.physical_function == "0000:81:00.0"
    gpu = next(d for d in pci if d.address == "0000:3b:00.0")
    assert [(t.type_id, t.available) for t in gpu.mdev_types] == [
        ("nvidia-222", 15),
        ("nvidia-223", 8),
    ]
    assert [(m.parent_address, m.type_id) for m in mdevs] == [("0000:3b:00.0", "nvidia-222")]


def test_allowlisted_pf_offers_its_vfs_and_a_gpu_offers_vgpus_as_children():
    providers = by_name(
        plan(devices=tuple(DEVICES), pci_device_spec=NIC_SPEC, enabled_mdev_types=["nvidia-222"])
    )
    nic = providers["cn1_0000:81:00.0"]
    assert totals(nic) == {"SRIOV_NET_VF": 4}
    assert nic.traits == {"CUSTOM_PHYSNET_DATA"}
    assert nic.parent_uuid == ROOT
    # 15 still available plus the one created: 16 in all, one of them in use.
    assert totals(providers["cn1_0000:3b:00.0"]) == {"VGPU": 16}
    assert "cn1_0000:5e:00.0" not in providers  # no rule selects the NVMe drive
    assert all(owns_child(ROOT, p.uuid, p.name) for p in providers.values() if p.parent_uuid)


def test_the_first_enabled_mdev_type_a_gpu_offers_wins_and_may_have_its_own_class():
    chosen = plan(
        devices=DEVICES,
        enabled_mdev_types=["nvidia-223", "nvidia-222"],
        mdev_classes={"nvidia-223": "CUSTOM_VGPU_2B"},
    )
    assert totals(by_name(chosen)["cn1_0000:3b:00.0"]) == {"CUSTOM_VGPU_2B": 8}


def test_rules_select_by_address_and_name_the_class():
    spec = [{"address": "0000:5e:00.*", "resource_class": "nvme"}]
    providers = by_name(plan(devices=tuple(DEVICES), pci_device_spec=spec))
    assert totals(providers["cn1_0000:5e:00.0"]) == {"CUSTOM_NVME": 1}
    plain = [{"vendor_id": "144d"}]
    assert totals(
        by_name(plan(devices=tuple(DEVICES), pci_device_spec=plain))["cn1_0000:5e:00.0"]
    ) == {"CUSTOM_PCI_144D_A808": 1}


def test_a_vf_rule_offers_the_vfs_listed_as_devices_on_their_pf():
    spec = [{"vendor_id": "8086", "product_id": "10ed"}]
    providers = by_name(plan(devices=tuple(DEVICES), pci_device_spec=spec))
    assert totals(providers["cn1_0000:81:00.0"]) == {"CUSTOM_PCI_8086_10ED": 2}


def test_device_spec_entries_are_checked():
    for bad in ({"vendor_id": "80861"}, {"address": "zz:00"}, {"traits": ["X"]}, {"colour": 1}):
        with pytest.raises(ValidationError):
            AgentSettings(pci_device_spec=[bad])


def test_provider_config_may_add_standard_classes_but_not_ones_the_agent_reports(tmp_path: Path):
    path = tmp_path / "provider.yaml"
    path.write_text(
        'meta: {schema_version: "1.0"}\nproviders:\n'
        "  - identification: {name: cn1}\n    inventories: {additional: [{FPGA: {total: 2}}]}\n"
    )
    host = facts()
    config = load_provider_config(path)
    root = build_host_plan(host, AgentSettings(), config, ROOT, "cn1").root
    assert root.inventories["FPGA"].total == 2
    path.write_text(path.read_text().replace("FPGA", "PCPU"))
    by_hand = build_host_plan(host, AgentSettings(), load_provider_config(path), ROOT, "cn1").root
    assert by_hand.inventories["PCPU"].total == 2  # no cpu_dedicated_set: the host has none
    path.write_text(path.read_text().replace("PCPU", "VCPU"))
    with pytest.raises(ProviderConfigError, match="VCPU, which the agent reports itself"):
        build_host_plan(host, AgentSettings(), load_provider_config(path), ROOT, "cn1")


def test_test_driver_serves_pci_sriov_and_mdev_node_devices(tmp_path: Path):
    found = build_host_facts(read_host(node_uri(DATA / "node-pci-mdev.xml"), tmp_path))
    assert [(d.address, d.vendor_id, d.product_id) for d in found.pci_devices] == [
        ("0000:3b:00.0", "10de", "1eb8"),
        ("0000:81:00.0", "8086", "154d"),
    ]
    assert found.pci_devices[1].vf_addresses == ("0000:81:10.0",)
    assert found.pci_devices[0].mdev_types[0].available == 16


def test_default_test_host_has_two_cells_of_eight_cpus(tmp_path: Path):
    found = build_host_facts(read_host("test:///default", tmp_path))
    assert [len(c.cpu_ids) for c in found.numa_cells] == [8, 8]
    assert all(c.huge_pages == () for c in found.numa_cells)
