"""The number of consumers on the host; a negative multiplier spreads them."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import HostWeigher
from scheduler.plugins.cycle import Cycle
from scheduler.plugins.instance_counts import count_instances


class InstanceCountWeigher(HostWeigher):
    name = "instance_count"
    description = "More consumers on the host weighs more; use a negative multiplier to spread."

    async def prepare_hosts(self, hosts: Sequence[HostState], cycle: Cycle) -> None:
        await count_instances(hosts, cycle)

    def raw_weight(self, host: HostState, context: Cycle) -> float:
        return float(host.num_instances or 0)
