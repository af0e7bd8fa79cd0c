"""A disabled compute service marks its root provider with ``COMPUTE_STATUS_DISABLED``."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle

DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"
DISABLED = reject(f"compute disabled: host has trait {DISABLED_TRAIT}")


class ComputeEnabledFilter(HostFilter):
    name = "compute_enabled"
    description = f"Removes hosts whose root provider has the {DISABLED_TRAIT} trait."

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        return DISABLED if DISABLED_TRAIT in host.traits else PASS
