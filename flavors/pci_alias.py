"""PCI aliases (``PLACEMENT_SCHEDULER_PCI_ALIAS``) in Nova's ``[pci] alias`` format, and
``pci_passthrough:alias`` (``name:count,name:count``) turned into request groups.

Each requested device is a request group of its own holding one unit, as Nova does
with PCI in Placement, so two devices may come from two providers.
"""

from __future__ import annotations

import re
from typing import Literal, Self

import os_traits
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from flavors.extra_specs import UnsupportedExtraSpec
from flavors.request_group import RequestGroup
from flavors.resource_names import normalize_class, pci_class

ALIAS_SPEC = "pci_passthrough:alias"
# A flavor asking for more devices than this (in all) is a typo, not a host.
MAX_DEVICES_PER_ALIAS = 64
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_REQUEST = re.compile(r"^(?P<name>[A-Za-z0-9_.-]{1,255})(?::(?P<count>\d{1,3}))?$")


class PciAlias(BaseModel):
    """One alias; ``traits`` is a comma-separated string as in Nova."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=255)
    vendor_id: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{4}$")
    product_id: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{4}$")
    device_type: Literal["type-PCI", "type-PF", "type-VF"] | None = None
    numa_policy: Literal["legacy", "preferred", "required", "socket"] | None = None
    resource_class: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,255}$")
    traits: str | None = None

    @field_validator("traits")
    @classmethod
    def _trait_names(cls, value: str | None) -> str | None:
        for name in (value or "").split(","):
            if name.strip() and not re.fullmatch(r"[A-Za-z0-9_]{1,255}", name.strip()):
                raise ValueError(f"{name.strip()!r} is not a trait name")
        return value

    @model_validator(mode="after")
    def _names_a_class(self) -> Self:
        if self.resource_class is None and (self.vendor_id is None or self.product_id is None):
            raise ValueError(f"alias {self.name}: give resource_class, or vendor_id and product_id")
        return self

    @property
    def placement_class(self) -> str:
        if self.resource_class is not None:
            return normalize_class(self.resource_class.upper())
        return pci_class((self.vendor_id or "").lower(), (self.product_id or "").lower())

    @property
    def required_traits(self) -> frozenset[str]:
        """Standard names as they are, others made ``CUSTOM_`` (as Nova)."""
        names = (name.strip().upper() for name in (self.traits or "").split(","))
        return frozenset(n if n in _STANDARD_TRAITS else _custom(n) for n in names if n)


def _custom(name: str) -> str:
    if name.startswith("CUSTOM_"):
        return name
    normalized: str = os_traits.normalize_name(name)
    return normalized


def parse_alias_request(value: str) -> list[tuple[str, int]]:
    """``a:2,b`` -> [(a, 2), (b, 1)]: the syntax alone, no alias looked up."""
    found = []
    for item in value.split(","):
        match = _REQUEST.match(item.strip())
        if match is None:
            raise UnsupportedExtraSpec(ALIAS_SPEC, f"{item.strip()!r} is not NAME or NAME:COUNT")
        count = int(match["count"] or 1)
        if not 1 <= count <= MAX_DEVICES_PER_ALIAS:
            raise UnsupportedExtraSpec(
                ALIAS_SPEC, f"count {count} is not between 1 and {MAX_DEVICES_PER_ALIAS}"
            )
        found.append((match["name"], count))
    if sum(count for _, count in found) > MAX_DEVICES_PER_ALIAS:
        raise UnsupportedExtraSpec(ALIAS_SPEC, f"asks more than {MAX_DEVICES_PER_ALIAS} devices")
    return found


def alias_groups(value: str, aliases: list[PciAlias]) -> list[RequestGroup]:
    known = {alias.name: alias for alias in aliases}
    groups: list[RequestGroup] = []
    for name, count in parse_alias_request(value):
        alias = known.get(name)
        if alias is None:
            names = ", ".join(sorted(known)) or "none"
            raise UnsupportedExtraSpec(
                ALIAS_SPEC, f"alias {name!r} is not configured (PLACEMENT_SCHEDULER_PCI_ALIAS "
                f"has: {names})"
            )  # fmt: skip
        if alias.numa_policy in ("required", "socket"):
            raise UnsupportedExtraSpec(
                ALIAS_SPEC,
                f"alias {name!r} has numa_policy={alias.numa_policy}, which this scheduler "
                "cannot honour (device and guest NUMA affinity is not checked)",
            )
        for _ in range(count):
            groups.append(
                RequestGroup(
                    suffix=f"_pci{len(groups)}",
                    resources={alias.placement_class: 1},
                    required=alias.required_traits,
                )
            )
    return groups
