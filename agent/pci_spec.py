"""The PCI device allowlist (``PLACEMENT_AGENT_PCI_DEVICE_SPEC``): which host devices
are offered to instances, as which resource class and with which traits.

A JSON list in the spirit of Nova's ``[pci] device_spec``, one object per rule::

    [{"vendor_id": "8086", "product_id": "154d", "address": "0000:81:*",
      "resource_class": "SRIOV_NET_VF", "traits": ["CUSTOM_PHYSNET_DATA"]}]

A device matches a rule when every field given matches (``*`` in an address is a
wildcard, as in Nova); the first matching rule wins.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Annotated, Self

import os_traits
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from agent.discovery.model import PciDevice
from flavors.resource_names import normalize_class, pci_class

SRIOV_NET_VF = "SRIOV_NET_VF"
_HEX_ID = r"^[0-9a-fA-F]{4}$"
_ADDRESS = re.compile(
    r"^(?:(?P<domain>[0-9a-f*]{1,4}):)?(?P<bus>[0-9a-f*]{1,2}):(?P<slot>[0-9a-f*]{1,2})"
    r"(?:\.(?P<function>[0-7*]))?$"
)
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")


def _address(value: str) -> str:
    """Stored whole (``domain:bus:slot.function``); a part left out matches anything."""
    match = _ADDRESS.match(value.lower())
    if match is None:
        raise ValueError(f"{value!r} is not a PCI address like 0000:81:00.0 (* allowed)")
    parts = {name: part or "*" for name, part in match.groupdict().items()}
    return f"{parts['domain']}:{parts['bus']}:{parts['slot']}.{parts['function']}"


def _resource_class(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} is not a resource class name")
    return normalize_class(value.upper())


def _trait(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} is not a trait name")
    upper = value.upper()
    return upper if upper in os_traits.get_traits() else os_traits.normalize_name(upper)


class PciDeviceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    vendor_id: str | None = Field(default=None, pattern=_HEX_ID)
    product_id: str | None = Field(default=None, pattern=_HEX_ID)
    address: Annotated[str, AfterValidator(_address)] | None = None
    resource_class: Annotated[str, AfterValidator(_resource_class)] | None = Field(
        default=None,
        description="Default: SRIOV_NET_VF for a NIC's VFs, else CUSTOM_PCI_<VENDOR>_<PRODUCT>.",
    )
    traits: list[Annotated[str, AfterValidator(_trait)]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _selects_something(self) -> Self:
        if self.vendor_id is None and self.product_id is None and self.address is None:
            raise ValueError("a device_spec entry needs vendor_id, product_id or address")
        return self

    def matches(self, device: PciDevice) -> bool:
        return (
            (self.vendor_id is None or self.vendor_id.lower() == device.vendor_id)
            and (self.product_id is None or self.product_id.lower() == device.product_id)
            and (self.address is None or _address_matches(self.address, device.address))
        )

    def class_for(self, device: PciDevice, offers_vfs: bool) -> str:
        """The class the device's units are reported as (its VFs' when it offers them)."""
        if self.resource_class is not None:
            return self.resource_class
        if offers_vfs and device.is_network:
            return SRIOV_NET_VF
        return pci_class(device.vendor_id, device.product_id)


def _address_matches(pattern: str, address: str) -> bool:
    """Each part compared as a number, so ``0:81:0.0`` matches ``0000:81:00.0``."""
    wanted, have = re.split(r"[:.]", pattern), re.split(r"[:.]", address)
    return all(
        fnmatch.fnmatchcase(h, w) if "*" in w else int(w, 16) == int(h, 16)
        for w, h in zip(wanted, have, strict=True)
    )


def matching_spec(specs: list[PciDeviceSpec], device: PciDevice) -> PciDeviceSpec | None:
    return next((spec for spec in specs if spec.matches(device)), None)
