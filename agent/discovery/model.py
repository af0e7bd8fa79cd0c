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
    # Huge pages set aside in the cell: (page size KiB, pages), base pages left out.
    huge_pages: tuple[tuple[int, int], ...] = ()
    # Some CPU of the cell has thread siblings (SMT).
    smt: bool = False

    @property
    def huge_page_mib(self) -> int:
        return sum(size_kib * count for size_kib, count in self.huge_pages) // 1024


@dataclass(frozen=True)
class Capabilities:
    cpu: HostCpu
    numa_cells: tuple[NumaCell, ...]


@dataclass(frozen=True)
class MdevType:
    """A mediated-device type a physical device offers (a vGPU type)."""

    type_id: str
    name: str
    available: int


@dataclass(frozen=True)
class PciDevice:
    """One PCI node device as libvirt describes it."""

    address: str  # 0000:81:00.0
    vendor_id: str  # 8086, lower case, no 0x
    product_id: str
    class_code: int
    numa_node: int | None
    # SR-IOV: addresses of the virtual functions a physical function has created.
    vf_addresses: tuple[str, ...] = ()
    # Set on a virtual function: its physical function's address.
    physical_function: str | None = None
    mdev_types: tuple[MdevType, ...] = ()

    @property
    def is_network(self) -> bool:
        return self.class_code >> 16 == 0x02


@dataclass(frozen=True)
class Mdev:
    """A mediated device created on a parent device (an instance's vGPU)."""

    parent_address: str
    type_id: str


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
    pci_devices: tuple[PciDevice, ...] = field(default=())
    mdevs: tuple[Mdev, ...] = field(default=())

    @property
    def cpu_ids(self) -> frozenset[int]:
        """The host's CPUs: the cells' when libvirt describes cells, else 0..N-1."""
        from_cells = frozenset(cpu for cell in self.numa_cells for cpu in cell.cpu_ids)
        return from_cells or frozenset(range(self.logical_cpus))

    @property
    def smt(self) -> bool:
        return any(cell.smt for cell in self.numa_cells)

    @property
    def huge_pages(self) -> dict[int, int]:
        """Page size KiB -> pages, over all cells."""
        pages: dict[int, int] = {}
        for cell in self.numa_cells:
            for size_kib, count in cell.huge_pages:
                pages[size_kib] = pages.get(size_kib, 0) + count
        return pages

    @property
    def running_domains(self) -> tuple[Domain, ...]:
        return tuple(domain for domain in self.domains if domain.active)
