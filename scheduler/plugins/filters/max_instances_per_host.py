"""At most ``max_instances_per_host`` consumers per host. A host's count is the
number of distinct consumers with allocations anywhere in its tree (the
root and its descendants, NUMA cells included), read from
Placement when the hosts are read (see ``instance_counts``)."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle
from scheduler.plugins.instance_counts import count_instances


class MaxInstancesPerHostFilter(HostFilter):
    name = "max_instances_per_host"
    description = "Removes hosts that already run max_instances_per_host consumers."

    async def prepare_hosts(self, hosts: Sequence[HostState], cycle: Cycle) -> None:
        await count_instances(hosts, cycle)

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        count = host.num_instances or 0
        if count < context.max_instances_per_host:
            return PASS
        return reject(f"max instances: {count} on host, limit is {context.max_instances_per_host}")
