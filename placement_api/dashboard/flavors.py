"""The flavors whose fits the dashboard shows: ``NAME=RC:N,...`` as ``--flavor`` says them."""

from __future__ import annotations

import re
from dataclasses import dataclass

_RESOURCE = re.compile(r"^[A-Z0-9_]+:[1-9][0-9]*$")


@dataclass(frozen=True)
class FlavorSpec:
    name: str
    resources: str  # as GET /capacity's ``resources`` takes it: "VCPU:4,MEMORY_MB:8192"


def parse_flavor(text: str) -> FlavorSpec:
    """``m1.large=VCPU:4,MEMORY_MB:8192``; a ValueError names what is wrong."""
    name, separator, resources = text.partition("=")
    name, resources = name.strip(), resources.replace(" ", "")
    if not separator or not name or not resources:
        raise ValueError(f"{text!r} is not NAME=RC:N,...")
    for item in resources.split(","):
        if not _RESOURCE.match(item):
            raise ValueError(f"{text!r}: {item!r} is not RESOURCE_CLASS:N (N a positive integer)")
    return FlavorSpec(name=name, resources=resources)


def parse_flavors(texts: list[str]) -> list[FlavorSpec]:
    flavors = [parse_flavor(text) for text in texts]
    names = [flavor.name for flavor in flavors]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"flavor named more than once: {', '.join(duplicates)}")
    return flavors
