"""Agent -> API -> scheduler -> claim for dedicated CPUs, asymmetric guest NUMA cells,
a PCI alias, a vGPU and huge pages: the allocations land (in the database) on the
providers that have what was asked, and a host without it is refused with the reason."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from flavors.pci_alias import PciAlias
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.agent.conftest import PlacementServer, one_pass
from tests.agent.hardware_hosts import (
    CAPABLE_HOST_OPTIONS,
    aggregate_of,
    overcommitted,
    recorded_host,
    stored_allocations,
)
from tests.scheduler.live import scheduler_placement

NIC_ALIAS = PciAlias(name="nic", resource_class="SRIOV_NET_VF", traits="PHYSNET_DATA")
ASYMMETRIC_CELLS = {
    "hw:numa_nodes": "2",
    "hw:numa_cpus.0": "0-1", "hw:numa_mem.0": "1024",
    "hw:numa_cpus.1": "2-5", "hw:numa_mem.1": "5120",
}  # fmt: skip
Flavor = tuple[int, int, dict[str, str]]
CELLS = ("_NUMA0", "_NUMA1", "_NUMA2", "_NUMA3")
SHARED_CELLS = ("_NUMA0", "_NUMA1")  # the cells with VCPU (cpu_shared_set 0-7)


@dataclass(frozen=True)
class Case:
    flavor: Flavor
    # Where each amount may land: (child provider name suffixes, class, amount).
    slots: list[tuple[tuple[str, ...], str, int]]
    # What one child provider must hold whole (a request group's amounts).
    groups: list[dict[str, int]]
    # What the plain host's refusal names.
    lacking: str


CASES: dict[str, Case] = {
    "dedicated CPUs": Case(
        (4, 2048, {"hw:cpu_policy": "dedicated"}),
        [(("_NUMA2", "_NUMA3"), "PCPU", 4), (("_NUMA2", "_NUMA3"), "MEMORY_MB", 2048)],
        [{"PCPU": 4, "MEMORY_MB": 2048}],
        "PCPU",
    ),
    "two asymmetric NUMA cells": Case(
        (6, 6144, ASYMMETRIC_CELLS),
        [
            (SHARED_CELLS, "VCPU", 2),
            (SHARED_CELLS, "MEMORY_MB", 1024),
            (SHARED_CELLS, "VCPU", 4),
            (SHARED_CELLS, "MEMORY_MB", 5120),
        ],
        [{"VCPU": 2, "MEMORY_MB": 1024}, {"VCPU": 4, "MEMORY_MB": 5120}],
        "MEMORY_MB",
    ),
    "a PCI alias": Case(
        (1, 512, {"pci_passthrough:alias": "nic"}),
        [
            (("_0000:81:00.0",), "SRIOV_NET_VF", 1),
            (SHARED_CELLS, "VCPU", 1),
            (CELLS, "MEMORY_MB", 512),
        ],
        [{"SRIOV_NET_VF": 1}],
        "SRIOV_NET_VF",
    ),
    "a vGPU": Case(
        (1, 512, {"resources:VGPU": "1"}),
        [(("_0000:3b:00.0",), "VGPU", 1), (SHARED_CELLS, "VCPU", 1), (CELLS, "MEMORY_MB", 512)],
        [{"VGPU": 1}],
        "VGPU",
    ),
    "huge pages": Case(
        (2, 2048, {"hw:mem_page_size": "2MB"}),
        # Only cell 0 has 2048 MiB of 2 MiB pages.
        [(("_NUMA0",), "VCPU", 2), (("_NUMA0",), "CUSTOM_HUGEPAGES_2MB", 2048)],
        [{"VCPU": 2, "CUSTOM_HUGEPAGES_2MB": 2048}],
        "CUSTOM_HUGEPAGES_2MB",
    ),
}


def assert_landed(stored: dict[str, dict[str, int]], root_name: str, case: Case) -> None:
    """Every amount on a provider allowed for it, and each group whole on one provider."""
    assert stored.pop(root_name) == {"DISK_GB": 1}
    slots = list(case.slots)
    for provider, held in stored.items():
        suffix = provider.removeprefix(root_name)
        for rc, amount in held.items():
            slot = next(s for s in slots if suffix in s[0] and s[1:] == (rc, amount))
            slots.remove(slot)
    assert slots == [], f"not allocated: {slots}"
    holdings = list(stored.values())
    for group in case.groups:
        assert group in holdings
        holdings.remove(group)


async def report_hosts(agent_settings: Any, tmp_path: Path) -> tuple[Any, Any]:
    """The recorded four-cell host with devices, and libvirt's plain test:///default."""
    capable = agent_settings(tmp_path / "capable.xml", **CAPABLE_HOST_OPTIONS)
    plain = agent_settings(tmp_path / "plain.xml", libvirt_uri="test:///default",
                           numa_providers=True)  # fmt: skip
    return await one_pass(capable, recorded_host), await one_pass(plain)


def request(flavor: Flavor, aggregate: str, consumer: str) -> Any:
    vcpus, memory_mb, specs = flavor
    return ScheduleRequest.model_validate(
        {
            "flavor": {"vcpus": vcpus, "memory_mb": memory_mb, "root_gb": 1, "extra_specs": specs},
            "member_of": [[aggregate]],
            "consumer_uuids": [consumer],
        }
    )


async def test_each_request_lands_on_providers_that_have_it_and_a_host_without_is_refused(
    agent_settings: Any,
    placement: httpx.Client,
    placement_server: PlacementServer,
    tmp_path: Path,
) -> None:
    """One host pair for every case (the instances add up on the capable host)."""
    capable, plain = await report_hosts(agent_settings, tmp_path)
    assert capable.error is None
    assert plain.error is None
    assert capable.provider_name is not None
    settings = SchedulerSettings(
        api_url=placement_server.url, provider_cache_seconds=0, pci_alias=[NIC_ALIAS]
    )
    client = scheduler_placement(placement_server.url)
    scheduler = Scheduler(settings, client)
    both = aggregate_of(placement, capable.provider_uuid, plain.provider_uuid)
    only_plain = aggregate_of(placement, plain.provider_uuid)
    try:
        for name, case in CASES.items():
            consumer = str(uuid.uuid4())
            chosen = await scheduler.schedule(request(case.flavor, both, consumer))
            assert chosen.selections[0].provider.uuid == capable.provider_uuid, name
            stored = await stored_allocations(placement_server.database_url, consumer)
            assert_landed(stored, capable.provider_name, case)
            assert await overcommitted(placement_server.database_url) == [], name
            with pytest.raises(NoValidHostError) as refused:
                await scheduler.schedule(request(case.flavor, only_plain, str(uuid.uuid4())))
            assert case.lacking in refused.value.message, name
    finally:
        await scheduler.aclose()
        await client.aclose()


async def test_thread_policy_and_whole_host_huge_pages_are_refused_by_the_filter(
    agent_settings: Any, placement: httpx.Client, placement_server: PlacementServer, tmp_path: Path
) -> None:
    capable = await one_pass(
        agent_settings(tmp_path / "smt.xml", **CAPABLE_HOST_OPTIONS), recorded_host
    )
    assert capable.provider_uuid is not None
    settings = SchedulerSettings(api_url=placement_server.url, provider_cache_seconds=0)
    client = scheduler_placement(placement_server.url)
    scheduler = Scheduler(settings, client)
    isolate = {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "isolate"}
    try:
        only = aggregate_of(placement, capable.provider_uuid)
        with pytest.raises(NoValidHostError) as refused:
            await scheduler.schedule(request((2, 1024, isolate), only, str(uuid.uuid4())))
        assert "hw:cpu_thread_policy=isolate: host has SMT" in refused.value.message
        required = {**isolate, "hw:cpu_thread_policy": "require"}
        chosen = await scheduler.schedule(request((2, 1024, required), only, str(uuid.uuid4())))
        assert chosen.selections[0].provider.uuid == capable.provider_uuid

        # Huge pages reported for the whole host could come from two cells at once.
        whole = agent_settings(tmp_path / "whole.xml", **CAPABLE_HOST_OPTIONS | {
            "numa_providers": False})  # fmt: skip
        summed = await one_pass(whole, recorded_host)
        assert summed.provider_uuid is not None
        pages = (2, 2048, {"hw:mem_page_size": "2MB"})
        with pytest.raises(NoValidHostError) as refused:
            await scheduler.schedule(
                request(pages, aggregate_of(placement, summed.provider_uuid), str(uuid.uuid4()))
            )
        assert "reports its huge pages for the whole host" in refused.value.message
    finally:
        await scheduler.aclose()
        await client.aclose()
