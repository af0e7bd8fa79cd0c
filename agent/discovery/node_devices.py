"""Parse libvirt's node-device XML (``virNodeDevice.XMLDesc``): PCI devices with their
SR-IOV functions and mediated-device types, and the mediated devices created on them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agent.discovery.model import Mdev, MdevType, PciDevice


class NodeDeviceError(ValueError):
    """A node device lacks what libvirt's format always gives (its PCI address, ids)."""


def parse_node_devices(
    documents: list[str] | tuple[str, ...],
) -> tuple[tuple[PciDevice, ...], tuple[Mdev, ...]]:
    """PCI devices and mediated devices among the documents; other kinds are skipped."""
    devices: list[PciDevice] = []
    mdevs: list[Mdev] = []
    for document in documents:
        root = ET.fromstring(document)
        for capability in root.findall("capability"):
            kind = capability.get("type")
            if kind == "pci":
                devices.append(_pci(capability))
            elif kind == "mdev":
                mdevs.append(_mdev(root, capability))
    return tuple(sorted(devices, key=lambda d: d.address)), tuple(mdevs)


def _pci(capability: ET.Element) -> PciDevice:
    address = pci_address(
        _int(capability, "domain"),
        _int(capability, "bus"),
        _int(capability, "slot"),
        _int(capability, "function"),
    )
    vendor = capability.find("vendor")
    product = capability.find("product")
    if vendor is None or product is None:
        raise NodeDeviceError(f"PCI device {address} names no vendor or product")
    numa = capability.find("numa")
    physical = capability.find("capability[@type='phys_function']/address")
    return PciDevice(
        address=address,
        vendor_id=_hex_id(vendor.get("id", "")),
        product_id=_hex_id(product.get("id", "")),
        class_code=int(capability.findtext("class") or "0", 16),
        numa_node=int(numa.get("node", "-1")) if numa is not None else None,
        vf_addresses=tuple(
            _address_of(element)
            for element in capability.findall("capability[@type='virt_functions']/address")
        ),
        physical_function=_address_of(physical) if physical is not None else None,
        mdev_types=tuple(
            MdevType(
                type_id=element.get("id", ""),
                name=(element.findtext("name") or "").strip(),
                available=int(element.findtext("availableInstances") or "0"),
            )
            for element in capability.findall("capability[@type='mdev_types']/type")
        ),
    )


def _mdev(root: ET.Element, capability: ET.Element) -> Mdev:
    """The parent is named like ``pci_0000_3b_00_0``; the type as ``<type id=...>``."""
    parent = (root.findtext("parent") or "").strip()
    type_element = capability.find("type")
    type_id = type_element.get("id", "") if type_element is not None else ""
    return Mdev(parent_address=_address_from_name(parent), type_id=type_id)


def pci_address(domain: int, bus: int, slot: int, function: int) -> str:
    return f"{domain:04x}:{bus:02x}:{slot:02x}.{function:x}"


def _address_of(element: ET.Element) -> str:
    return pci_address(
        int(element.get("domain", "0"), 16),
        int(element.get("bus", "0"), 16),
        int(element.get("slot", "0"), 16),
        int(element.get("function", "0"), 16),
    )


def _address_from_name(name: str) -> str:
    parts = name.removeprefix("pci_").split("_")
    if len(parts) != 4:
        return name
    domain, bus, slot, function = (int(part, 16) for part in parts)
    return pci_address(domain, bus, slot, function)


def _int(capability: ET.Element, tag: str) -> int:
    text = capability.findtext(tag)
    if text is None:
        raise NodeDeviceError(f"PCI device has no <{tag}>")
    return int(text.strip(), 0)


def _hex_id(value: str) -> str:
    return value.lower().removeprefix("0x").zfill(4)
