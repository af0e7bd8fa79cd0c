"""Free memory (capacity under the allocation ratio minus usage) across the host's tree."""

from __future__ import annotations

from scheduler.context import SchedulingContext
from scheduler.host_state import HostState
from scheduler.plugins.base import HostWeigher


class RamWeigher(HostWeigher):
    name = "ram"
    description = "More free MEMORY_MB weighs more (less when the strategy is pack)."
    follows_strategy = True

    def raw_weight(self, host: HostState, context: SchedulingContext) -> float:
        return float(host.free("MEMORY_MB"))
