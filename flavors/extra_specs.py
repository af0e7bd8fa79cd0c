"""Which flavor extra specs are understood, and the error for those that are not.

A spec the scheduler would ignore is refused, never dropped: a tenant asking for
something the scheduler cannot give must hear so (docs/extra-specs.md has the table).
Unscoped keys and ``aggregate_instance_extra_specs:`` keys are the aggregate filter's;
the scheduler refuses them itself when that filter is not enabled.
"""

from __future__ import annotations

import re

AGGREGATE_SCOPE = "aggregate_instance_extra_specs"
_UNDERSTOOD = re.compile(
    r"^(?:resources[a-zA-Z0-9_-]{0,64}:[A-Z0-9_]+|trait[a-zA-Z0-9_-]{0,64}:[A-Z0-9_]+"
    r"|group_policy|pci_passthrough:alias"
    r"|hw:(?:cpu_policy|cpu_thread_policy|cpu_dedicated_mask|numa_nodes|mem_page_size"
    r"|numa_cpus\.\d{1,4}|numa_mem\.\d{1,4}))$"
)
# Nova's unscoped names that are not aggregate metadata (null.py in its validators).
_NOVA_UNSCOPED = frozenset({"hide_hypervisor_id"})


class UnsupportedExtraSpec(ValueError):
    """An extra spec (or image property) the scheduler does not understand or cannot
    honour; the message starts with its name."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        super().__init__(f"extra spec {key}: {reason}")


def is_aggregate_key(key: str) -> bool:
    """Left to the aggregate filter: unscoped (not Nova's own) or explicitly scoped."""
    scope, colon, _ = key.partition(":")
    if colon:
        return scope == AGGREGATE_SCOPE
    return key not in _NOVA_UNSCOPED and key != "group_policy"


def check_understood(specs: dict[str, str]) -> None:
    for key in sorted(specs):
        if _UNDERSTOOD.match(key) or is_aggregate_key(key):
            continue
        raise UnsupportedExtraSpec(
            key,
            "not supported by this scheduler, which would otherwise ignore it; remove it "
            "from the flavor (docs/extra-specs.md lists what is supported)",
        )
