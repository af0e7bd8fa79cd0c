"""Resource class names the agent reports and the scheduler asks for: one spelling,
written once, so a flavor's request always matches a host's inventory."""

from __future__ import annotations

import re

import os_resource_classes

HUGEPAGES_PREFIX = "CUSTOM_HUGEPAGES_"
_KIB_PER = {"": 1, "k": 1, "kb": 1, "kib": 1, "m": 1024, "mb": 1024, "mib": 1024}
_KIB_PER |= {"g": 1024**2, "gb": 1024**2, "gib": 1024**2}
_SIZE = re.compile(r"^(?P<number>\d{1,9})\s*(?P<unit>[a-z]*)$")


def hugepage_class(size_kib: int) -> str:
    """``CUSTOM_HUGEPAGES_2MB`` for 2048 KiB pages, ``CUSTOM_HUGEPAGES_1GB`` for 1 GiB;
    amounts of these classes are MiB of memory backed by such pages."""
    if size_kib % 1024**2 == 0:
        return f"{HUGEPAGES_PREFIX}{size_kib // 1024**2}GB"
    if size_kib % 1024 == 0:
        return f"{HUGEPAGES_PREFIX}{size_kib // 1024}MB"
    return f"{HUGEPAGES_PREFIX}{size_kib}KB"


def page_size_kib(text: str) -> int:
    """Nova's page size spelling (``2048``, ``2MB``, ``1GB``, ``2048KiB``): a bare number is KiB."""
    match = _SIZE.match(text.strip().lower())
    if match is None or match["unit"] not in _KIB_PER:
        raise ValueError(f"{text!r} is not a page size (a number of KiB, or with KB, MB or GB)")
    return int(match["number"]) * _KIB_PER[match["unit"]]


def pci_class(vendor_id: str, product_id: str) -> str:
    """Nova's default class of a PCI device: ``CUSTOM_PCI_<VENDOR>_<PRODUCT>``."""
    return f"CUSTOM_PCI_{vendor_id.upper()}_{product_id.upper()}"


def normalize_class(name: str) -> str:
    """A standard class stays as it is; anything else becomes ``CUSTOM_<NAME>`` (as Nova)."""
    if name in os_resource_classes.STANDARDS or name.startswith("CUSTOM_"):
        return name
    normalized: str = os_resource_classes.normalize_name(name)
    return normalized
