"""The agent's live loop against libvirt's test driver serving PCI, SR-IOV and mdev node
devices from a custom node file: device providers appear, follow the host, and go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from agent.pci_spec import PciDeviceSpec
from agent.reporting_pass import Outcome
from tests.agent.conftest import one_pass
from tests.agent.nodes import DATA
from tests.agent.test_reporting_against_api import inventories, read
from tests.agent.test_tree_changes import tree

NODE = (DATA / "node-pci-mdev.xml").read_text()
OPTIONS = {
    "pci_device_spec": [{"vendor_id": "8086", "product_id": "154d"}],
    "enabled_mdev_types": ["nvidia-222"],
}
# What the test driver then serves: a second VF of the NIC (a device of its own, not
# yet in the PF's list), and one vGPU created on the T4 (one instance fewer available).
VF_AND_MDEV = """  <device>
    <name>pci_0000_81_10_2</name>
    <parent>pci_0000_81_00_0</parent>
    <capability type='pci'>
      <class>0x020000</class>
      <domain>0</domain><bus>129</bus><slot>16</slot><function>2</function>
      <product id='0x10ed'>X520 Virtual Function</product>
      <vendor id='0x8086'>Intel Corporation</vendor>
      <capability type='phys_function'>
        <address domain='0x0000' bus='0x81' slot='0x00' function='0x0'/>
      </capability>
    </capability>
  </device>
  <device>
    <name>mdev_4b20d080_1b54_4048_85b3_a6a62d165c01</name>
    <parent>pci_0000_3b_00_0</parent>
    <capability type='mdev'><type id='nvidia-222'/><iommuGroup number='12'/></capability>
  </device>
</node>"""


def device_totals(placement: httpx.Client, root_uuid: str | None) -> dict[str, dict[str, int]]:
    """Child provider name suffix -> class -> total."""
    found = {}
    for name, provider in tree(placement, root_uuid).items():
        if provider["uuid"] != root_uuid:
            held = inventories(placement, provider["uuid"])
            found[name.split("_", 1)[1]] = {rc: r["total"] for rc, r in held.items()}
    return found


async def test_device_providers_follow_the_node_devices_libvirt_serves(
    agent_settings: Any, placement: httpx.Client, tmp_path: Path
) -> None:
    node = tmp_path / "devices.xml"
    node.write_text(NODE)
    settings = agent_settings(node, **OPTIONS)
    first = await one_pass(settings)
    assert first.outcome is Outcome.SYNCED, first.error
    assert device_totals(placement, first.provider_uuid) == {
        "0000:81:00.0": {"SRIOV_NET_VF": 1},
        "0000:3b:00.0": {"VGPU": 16},
    }

    node.write_text(
        NODE.replace("<availableInstances>16", "<availableInstances>15").replace(
            "</node>", VF_AND_MDEV
        )
    )
    second = await one_pass(settings)
    assert second.outcome is Outcome.SYNCED, second.error
    # Two VFs now; the T4 has 15 free + 1 created = 16 still.
    assert device_totals(placement, first.provider_uuid) == {
        "0000:81:00.0": {"SRIOV_NET_VF": 2},
        "0000:3b:00.0": {"VGPU": 16},
    }

    node.write_text(NODE.replace("<vendor id='0x8086'>", "<vendor id='0x8087'>"))
    third = await one_pass(settings)
    assert third.outcome is Outcome.SYNCED, third.error
    assert device_totals(placement, first.provider_uuid) == {"0000:3b:00.0": {"VGPU": 16}}
    assert third.tree.deleted != []


async def test_a_trait_taken_out_of_the_device_spec_is_taken_off_the_device(
    agent_settings: Any, placement: httpx.Client, tmp_path: Path
) -> None:
    node = tmp_path / "traits.xml"
    node.write_text(NODE)
    rule = {"vendor_id": "8086", "traits": ["PHYSNET_A"]}
    settings = agent_settings(node, pci_device_spec=[rule])
    first = await one_pass(settings)
    nic = tree(placement, first.provider_uuid)[f"{first.provider_name}_0000:81:00.0"]
    traits_path = f"/resource_providers/{nic['uuid']}/traits"
    assert read(placement, traits_path)["traits"] == ["CUSTOM_PHYSNET_A"]

    other_rule = PciDeviceSpec.model_validate(rule | {"traits": ["PHYSNET_B"]})
    second = await one_pass(settings.model_copy(update={"pci_device_spec": [other_rule]}))
    assert second.outcome is Outcome.SYNCED, second.error
    assert read(placement, traits_path)["traits"] == ["CUSTOM_PHYSNET_B"]


async def test_default_test_host_reports_its_two_cells_shared_and_dedicated_cpus(
    agent_settings: Any, placement: httpx.Client, tmp_path: Path
) -> None:
    settings = agent_settings(
        tmp_path / "default.xml",
        libvirt_uri="test:///default",
        numa_providers=True,
        cpu_shared_set="0-3,8-11",
        cpu_dedicated_set="4-7,12-15",
    )
    result = await one_pass(settings)
    assert result.outcome in (Outcome.SYNCED, Outcome.DRIFT), result.error  # its domain: drift
    cells = {
        name.rsplit("_", 1)[1]: {
            rc: r["total"] for rc, r in inventories(placement, p["uuid"]).items()
        }
        for name, p in tree(placement, result.provider_uuid).items()
        if p["uuid"] != result.provider_uuid
    }
    assert {cell: (held["VCPU"], held["PCPU"]) for cell, held in cells.items()} == {
        "NUMA0": (4, 4),
        "NUMA1": (4, 4),
    }
