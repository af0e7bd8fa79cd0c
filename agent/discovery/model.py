"""What discovery learns about a host: plain values, no libvirt objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CpuTopology:
    sockets: int
    cores: int
    threads: int
    numa_nodes: int


@dataclass(frozen=True)
class HostCpu:
    """The host CPU as the capabilities document describes it."""

    arch: str
    model: str | None
    vendor: str | None
    # The <cpu> element itself, the input libvirt's baselineCPU expects.
    xml: str


@dataclass(frozen=True)
class NumaCell:
    cell_id: int
    memory_mib: int
    cpu_ids: tuple[int, ...]


@dataclass(frozen=True)
class Capabilities:
    cpu: HostCpu
    numa_cells: tuple[NumaCell, ...]


@dataclass(frozen=True)
class Domain:
    uuid: str
    name: str
    active: bool
    vcpus: int
    memory_mib: int
    # CPU time the domain has used since it started: utilisation, not allocation.
    cpu_time_ns: int


@dataclass(frozen=True)
class HostUsage:
    """Utilisation counters of one pass, compared with the previous pass's.
    None where the libvirt driver does not give them."""

    # time.monotonic() when they were read.
    read_at: float
    # virNodeGetCPUStats over all CPUs: cumulative nanoseconds (kernel, user, idle, iowait).
    cpu_times_ns: Mapping[str, int] | None
    # virNodeGetMemoryStats over all cells, KiB (total, free, buffers, cached).
    memory_kib: Mapping[str, int] | None


@dataclass(frozen=True)
class HostFacts:
    """Everything the agent reports is derived from one of these."""

    hostname: str
    arch: str
    logical_cpus: int
    memory_mib: int
    disk_gib: int
    cpu_model: str | None
    cpu_features: frozenset[str]
    topology: CpuTopology
    numa_cells: tuple[NumaCell, ...]
    usage: HostUsage
    domains: tuple[Domain, ...] = field(default=())

    @property
    def running_domains(self) -> tuple[Domain, ...]:
        return tuple(domain for domain in self.domains if domain.active)
