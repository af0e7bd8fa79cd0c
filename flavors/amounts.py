"""One syntax for amounts on every command line: Placement's ``VCPU:2,MEMORY_MB:512``,
with ``VCPU=2`` accepted for each item (``placement-scheduler schedule --resource``
took that form first)."""

from __future__ import annotations


def placement_form(text: str) -> str:
    """``VCPU=2,MEMORY_MB:512`` -> ``VCPU:2,MEMORY_MB:512``; anything else is left for the
    caller's parser to name."""
    return ",".join(item.strip().replace("=", ":", 1) for item in text.split(","))
