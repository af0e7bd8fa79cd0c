"""The number of consumers on the host; a negative multiplier spreads them."""

from __future__ import annotations

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import HostWeigher


class InstanceCountWeigher(HostWeigher):
    name = "instance_count"
    description = "More consumers on the host weighs more; use a negative multiplier to spread."
    needs_instance_counts = True

    def raw_weight(self, host: HostState, context: SchedulingContext) -> float:
        return float(host.num_instances or 0)
