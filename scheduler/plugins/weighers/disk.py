"""Free DISK_GB across the host's tree (shared storage is not the host's own)."""

from __future__ import annotations

from scheduler.context import SchedulingContext
from scheduler.host_state import HostState
from scheduler.plugins.base import HostWeigher


class DiskWeigher(HostWeigher):
    name = "disk"
    description = "More free DISK_GB weighs more (less when the strategy is pack)."
    follows_strategy = True

    def raw_weight(self, host: HostState, context: SchedulingContext) -> float:
        return float(host.free("DISK_GB"))
