"""Parse libvirt's host capabilities XML (``virConnectGetCapabilities``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agent.discovery.model import Capabilities, HostCpu, NumaCell

_KIB_PER_UNIT = {"b": 1 / 1024, "bytes": 1 / 1024, "kib": 1, "k": 1, "mib": 1024, "m": 1024}
_KIB_PER_UNIT |= {"gib": 1024**2, "g": 1024**2, "tib": 1024**3, "t": 1024**3}


class CapabilitiesError(ValueError):
    """The capabilities document lacks something every libvirt driver provides."""


def parse_capabilities(xml: str) -> Capabilities:
    root = ET.fromstring(xml)
    cpu_element = root.find("host/cpu")
    if cpu_element is None:
        raise CapabilitiesError("capabilities XML has no <host><cpu> element")
    return Capabilities(cpu=_parse_host_cpu(cpu_element), numa_cells=_parse_cells(root))


def _parse_host_cpu(element: ET.Element) -> HostCpu:
    arch = (element.findtext("arch") or "").strip()
    if not arch:
        raise CapabilitiesError("capabilities XML names no host CPU architecture")
    model = (element.findtext("model") or "").strip() or None
    vendor = (element.findtext("vendor") or "").strip() or None
    return HostCpu(
        arch=arch,
        model=model,
        vendor=vendor,
        xml=ET.tostring(element, encoding="unicode"),
    )


def _parse_cells(root: ET.Element) -> tuple[NumaCell, ...]:
    cells = []
    for cell in root.findall("host/topology/cells/cell"):
        memory = cell.find("memory")
        memory_kib = _to_kib(memory) if memory is not None else 0
        cpus = cell.findall("cpus/cpu")
        cpu_ids = tuple(sorted(int(cpu.get("id", "0")) for cpu in cpus))
        cells.append(
            NumaCell(
                cell_id=int(cell.get("id", "0")),
                memory_mib=memory_kib // 1024,
                cpu_ids=cpu_ids,
                huge_pages=_huge_pages(cell),
                smt=any(
                    "," in cpu.get("siblings", "") or "-" in cpu.get("siblings", "") for cpu in cpus
                ),
            )
        )
    return tuple(sorted(cells, key=lambda cell: cell.cell_id))


def _huge_pages(cell: ET.Element) -> tuple[tuple[int, int], ...]:
    """Pages larger than the cell's base size (its smallest listed: memory in those is
    MEMORY_MB) that the cell has set aside (count > 0)."""
    pages = []
    for page in cell.findall("pages"):
        if page.get("unit", "KiB").lower() != "kib":
            raise CapabilitiesError(f"unknown page size unit {page.get('unit')!r}")
        pages.append((int(page.get("size", "0")), int((page.text or "0").strip())))
    if not pages:
        return ()
    base_kib = min(size for size, _ in pages)
    return tuple(sorted((size, count) for size, count in pages if size > base_kib and count > 0))


def _to_kib(element: ET.Element) -> int:
    unit = element.get("unit", "KiB").lower()
    factor = _KIB_PER_UNIT.get(unit)
    if factor is None:
        raise CapabilitiesError(f"unknown memory unit {unit!r} in capabilities XML")
    return int(int((element.text or "0").strip()) * factor)
