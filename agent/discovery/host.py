"""Build HostFacts from what libvirt returned: a pure function, testable offline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent.discovery.capabilities import parse_capabilities
from agent.discovery.cpu_traits import parse_expanded_cpu
from agent.discovery.model import CpuTopology, Domain, HostFacts, HostUsage
from agent.discovery.node_devices import parse_node_devices

_GIB = 1024**3


@dataclass(frozen=True)
class RawDomain:
    """One ``virDomain``: identity plus its ``info()`` list."""

    uuid: str
    name: str
    active: bool
    # [state, max memory KiB, memory KiB, vCPUs, CPU time ns]
    info: Sequence[int]


@dataclass(frozen=True)
class RawHost:
    """Answers from libvirt (and statvfs for the instances path), unparsed."""

    hostname: str
    # virNodeGetInfo: [model, memory MiB, cpus, mhz, nodes, sockets per node, cores, threads]
    node_info: Sequence[str | int]
    # virNodeGetMemoryStats over all cells in KiB; None where the driver lacks it.
    memory_stats: Mapping[str, int] | None
    # virNodeGetCPUStats over all CPUs in ns; None where the driver lacks it.
    cpu_stats: Mapping[str, int] | None
    # time.monotonic() when the counters were read.
    read_at: float
    capabilities_xml: str
    # baselineCPU with EXPAND_FEATURES; None when libvirt could not expand the host CPU.
    expanded_cpu_xml: str | None
    domains: Sequence[RawDomain]
    instances_disk_bytes: int
    # XMLDesc of each PCI and mediated node device; empty where the driver has none.
    node_devices_xml: Sequence[str] = ()


def build_host_facts(raw: RawHost) -> HostFacts:
    capabilities = parse_capabilities(raw.capabilities_xml)
    # Without an expansion only the features listed beside the model are known.
    features = parse_expanded_cpu(raw.expanded_cpu_xml or capabilities.cpu.xml)
    pci_devices, mdevs = parse_node_devices(tuple(raw.node_devices_xml))
    return HostFacts(
        hostname=raw.hostname,
        arch=capabilities.cpu.arch,
        logical_cpus=int(raw.node_info[2]),
        memory_mib=total_memory_mib(raw.node_info, raw.memory_stats),
        disk_gib=raw.instances_disk_bytes // _GIB,
        cpu_model=capabilities.cpu.model,
        cpu_features=features,
        topology=topology_from_node_info(raw.node_info),
        numa_cells=capabilities.numa_cells,
        usage=HostUsage(raw.read_at, raw.cpu_stats, raw.memory_stats),
        domains=tuple(domain_from_raw(domain) for domain in raw.domains),
        pci_devices=pci_devices,
        mdevs=mdevs,
    )


def total_memory_mib(node_info: Sequence[str | int], memory_stats: Mapping[str, int] | None) -> int:
    """Prefer the node memory stats: ``getInfo()`` sums NUMA meminfo and can under-report."""
    if memory_stats and memory_stats.get("total"):
        return int(memory_stats["total"]) // 1024
    return int(node_info[1])


def topology_from_node_info(node_info: Sequence[str | int]) -> CpuTopology:
    nodes = max(int(node_info[4]), 1)
    return CpuTopology(
        sockets=nodes * int(node_info[5]),
        cores=int(node_info[6]),
        threads=int(node_info[7]),
        numa_nodes=nodes,
    )


def domain_from_raw(raw: RawDomain) -> Domain:
    return Domain(
        uuid=raw.uuid,
        name=raw.name,
        active=raw.active,
        vcpus=int(raw.info[3]),
        memory_mib=int(raw.info[1]) // 1024,
        cpu_time_ns=int(raw.info[4]),
    )
