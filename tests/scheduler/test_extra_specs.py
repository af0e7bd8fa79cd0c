"""Flavor extra specs and image properties in Placement's request language, and every
spec the scheduler cannot honour refused with a 400 that names it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx import ASGITransport
from pydantic import ValidationError

from flavors.extra_specs import UnsupportedExtraSpec
from flavors.flavor import Flavor, flavor_groups
from flavors.pci_alias import PciAlias
from scheduler.request.spec import ScheduleRequest
from scheduler.serving.service import create_app
from scheduler.settings import SchedulerSettings
from tests.support.server import free_port

NOVA_NAMES = Path(__file__).parent / "data" / "nova-extra-specs.txt"
# What this scheduler honours of Nova's list (after filling the placeholders).
SUPPORTED = {
    "group_policy", "pci_passthrough:alias", "aggregate_instance_extra_specs:ssd",
    "hw:cpu_policy", "hw:cpu_thread_policy", "hw:cpu_dedicated_mask", "hw:numa_nodes",
    "hw:numa_cpus.0", "hw:numa_mem.0", "hw:mem_page_size",
}  # fmt: skip
NIC = PciAlias(name="nic", resource_class="SRIOV_NET_VF", traits="physnet_data")
GPU = PciAlias(name="t4", vendor_id="10de", product_id="1EB8")


def groups(*, vcpus: Any = 4, memory_mb: Any = 4096, image: Any = None, **specs: Any) -> Any:
    flavor = Flavor(vcpus=vcpus, memory_mb=memory_mb, root_gb=10, extra_specs=specs)
    found = flavor_groups(flavor, image, [NIC, GPU])
    return found, {g.suffix: g.resources for g in found.granular}


def refused(key: str, **fields: Any) -> str:
    """The message, which names the spec (a flavor checks itself when it is made)."""
    with pytest.raises((UnsupportedExtraSpec, ValidationError)) as caught:
        groups(**fields)
    assert f"extra spec {key}:" in str(caught.value)
    return str(caught.value)


def test_dedicated_policy_asks_pcpu_from_one_provider_as_an_implicit_cell():
    found, cells = groups(**{"hw:cpu_policy": "dedicated"})
    assert found.resources == {"DISK_GB": 10}
    assert cells == {"_numa0": {"PCPU": 4, "MEMORY_MB": 4096}}


def test_shared_policy_keeps_vcpu_in_the_unnumbered_group():
    found, cells = groups(**{"hw:cpu_policy": "shared"})
    assert found.resources == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}
    assert cells == {}


def test_mixed_policy_splits_by_the_dedicated_mask_and_its_exclusion_form():
    assert groups(**{"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "2-3"})[1] == {
        "_numa0": {"VCPU": 2, "PCPU": 2, "MEMORY_MB": 4096}
    }
    assert (
        groups(**{"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0"})[1]["_numa0"]["PCPU"]
        == 3
    )
    assert "both dedicated and shared" in refused(
        "hw:cpu_dedicated_mask", **{"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-3"}
    )


def test_asymmetric_numa_cells_are_isolated_groups_with_their_own_cpus_and_memory():
    found, cells = groups(
        vcpus=6,
        memory_mb=6144,
        **{
            "hw:cpu_policy": "dedicated", "hw:numa_nodes": "2",
            "hw:numa_cpus.0": "0-1", "hw:numa_mem.0": "1024",
            "hw:numa_cpus.1": "2-5", "hw:numa_mem.1": "5120",
        },
    )  # fmt: skip
    assert cells == {
        "_numa0": {"PCPU": 2, "MEMORY_MB": 1024},
        "_numa1": {"PCPU": 4, "MEMORY_MB": 5120},
    }
    assert found.group_policy == "isolate"


def test_even_split_and_the_ways_cells_can_be_wrong():
    assert groups(**{"hw:numa_nodes": "2"})[1] == {
        "_numa0": {"VCPU": 2, "MEMORY_MB": 2048},
        "_numa1": {"VCPU": 2, "MEMORY_MB": 2048},
    }
    assert "do not split evenly" in refused("hw:numa_nodes", vcpus=3, **{"hw:numa_nodes": "2"})
    cells = {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0", "hw:numa_mem.0": "1024"}
    assert "every cell needs" in refused("hw:numa_cpus.1", **cells)
    assert "needs hw:numa_nodes" in refused("hw:numa_cpus.0", **{"hw:numa_cpus.0": "0"})
    assert "isolate" not in refused("hw:numa_nodes", **{"hw:numa_nodes": "9"})
    policy_none = {"hw:numa_nodes": "2", "group_policy": "none"}
    assert "share one host cell" in refused("group_policy", **policy_none)


def test_page_size_asks_the_huge_page_class_in_mib():
    assert groups(**{"hw:mem_page_size": "2MB"})[1] == {
        "_numa0": {"VCPU": 4, "CUSTOM_HUGEPAGES_2MB": 4096}
    }
    assert groups(**{"hw:mem_page_size": "1048576"})[1]["_numa0"]["CUSTOM_HUGEPAGES_1GB"] == 4096
    assert groups(**{"hw:mem_page_size": "small"})[0].resources["MEMORY_MB"] == 4096
    assert "name the size" in refused("hw:mem_page_size", **{"hw:mem_page_size": "large"})
    assert "whole number" in refused(
        "hw:mem_page_size", memory_mb=1536, **{"hw:mem_page_size": "1GB"}
    )


def test_pci_alias_asks_one_group_per_device_with_the_alias_class_and_traits():
    found, cells = groups(**{"pci_passthrough:alias": "nic:2,t4"})
    assert cells == {
        "_pci0": {"SRIOV_NET_VF": 1},
        "_pci1": {"SRIOV_NET_VF": 1},
        "_pci2": {"CUSTOM_PCI_10DE_1EB8": 1},
    }
    assert {g.suffix: g.required for g in found.granular}["_pci0"] == {"CUSTOM_PHYSNET_DATA"}
    assert "'gpu' is not configured" in refused(
        "pci_passthrough:alias", **{"pci_passthrough:alias": "gpu"}
    )


def test_vgpu_resources_stay_in_the_unnumbered_group():
    assert groups(**{"resources:VGPU": "1"})[0].resources["VGPU"] == 1


def test_image_properties_shape_the_guest_and_must_not_contradict_the_flavor():
    assert groups(image={"hw_cpu_policy": "dedicated"})[1] == {
        "_numa0": {"PCPU": 4, "MEMORY_MB": 4096}
    }
    assert "image's hw_cpu_policy" in refused(
        "hw:cpu_policy", image={"hw_cpu_policy": "dedicated"}, **{"hw:cpu_policy": "shared"}
    )
    without_flavor = {"resources": {"VCPU": 1}, "image_properties": {"hw_numa_nodes": 2}}
    with pytest.raises(ValidationError, match=r"extra spec hw_numa_nodes: .* needs a flavor"):
        ScheduleRequest.model_validate(without_flavor)


def test_explicit_amounts_beside_the_hw_specs_that_ask_for_them_are_refused():
    pinned = {"hw:cpu_policy": "dedicated"}
    assert "conflicts with the hw: specs" in refused(
        "resources:PCPU", **pinned, **{"resources:PCPU": "2"}
    )
    flavor = {"vcpus": 2, "memory_mb": 512, "extra_specs": pinned}
    with pytest.raises(ValidationError, match="resources VCPU: the flavor's hw: specs"):
        ScheduleRequest.model_validate({"flavor": flavor, "resources": {"VCPU": 2}})
    # Without hw: specs an explicit amount still overrides the flavor's, as before.
    plain = ScheduleRequest.model_validate(
        {"flavor": {**flavor, "extra_specs": {}}, "resources": {"VCPU": 3}}
    )
    assert plain.flavor is not None


def test_hostile_sizes_are_refused_before_any_set_is_built():
    huge = {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-999999999"}
    assert "past KVM's 4096" in refused("hw:cpu_dedicated_mask", vcpus=10**9, **huge)
    assert "more than 64 devices" in refused("pci_passthrough:alias", **{
        "pci_passthrough:alias": ",".join(["nic:60", "t4:5"])})  # fmt: skip
    assert groups(vcpus=10**9, memory_mb=1)[0].resources["VCPU"] == 10**9  # no hw: specs


def test_thread_policy_needs_dedicated_cpus():
    assert "dedicated only" in refused(
        "hw:cpu_thread_policy", **{"hw:cpu_thread_policy": "require"}
    )


def nova_names() -> list[str]:
    """Nova's names with its placeholders filled: unnumbered groups, cell 0, no filter."""
    lines = [line.strip() for line in NOVA_NAMES.read_text().splitlines()]
    names = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        name = line.replace("{group}", "").replace("{num}", "0").replace("{filter}", "")
        name = name.replace("{key}", "ssd").replace("{resource}", "X").replace("{trait}", "X")
        names.append(name)
    return sorted(set(names))


@pytest.fixture
async def service() -> AsyncIterator[httpx.AsyncClient]:
    settings = SchedulerSettings(api_url=f"http://127.0.0.1:{free_port()}", request_timeout=2)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
            yield http


async def test_every_nova_extra_spec_we_do_not_honour_is_a_400_naming_it(
    service: httpx.AsyncClient,
) -> None:
    names = nova_names()
    assert len(names) > 500  # the whole list, not a sample
    honoured = {n for n in names if re.match(r"^(resources|trait):", n)} | (SUPPORTED & set(names))
    assert set(names) >= SUPPORTED
    refused_names = [n for n in names if n not in honoured]
    assert "hw:cpu_realtime" in refused_names
    assert "capabilities:cpu_info" in refused_names
    for name in refused_names:
        flavor = {"vcpus": 1, "memory_mb": 512, "extra_specs": {name: "1"}}
        response = await service.post("/v1/schedule", json={"flavor": flavor})
        assert response.status_code == 400, name
        (error,) = response.json()["errors"]
        assert f"extra spec {name}:" in error["detail"], error["detail"]


@pytest.mark.parametrize(
    ("filters", "specs", "named"),
    [
        (
            ["compute_enabled"],
            {"ssd": "true"},
            "extra spec ssd: aggregate metadata is checked by the aggregate_extra_specs",
        ),
        (
            ["aggregate_extra_specs"],
            {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "require"},
            "extra spec hw:cpu_thread_policy: the thread policy is checked by the numa_topology",
        ),
    ],
)
async def test_a_spec_only_a_disabled_filter_honours_is_a_400(
    filters: list[str], specs: dict[str, str], named: str
) -> None:
    settings = SchedulerSettings(
        api_url=f"http://127.0.0.1:{free_port()}", request_timeout=2, enabled_filters=filters
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
            flavor = {"vcpus": 2, "memory_mb": 512, "extra_specs": specs}
            response = await http.post("/v1/schedule", json={"flavor": flavor})
    assert response.status_code == 400
    assert named in response.json()["errors"][0]["detail"]
