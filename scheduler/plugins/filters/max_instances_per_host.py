"""At most ``max_instances_per_host`` consumers per host. A host's count is the
number of consumers with allocations on its root provider, read from
Placement and kept current for the scheduler's own claims (see ``directory``)."""

from __future__ import annotations

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject


class MaxInstancesPerHostFilter(HostFilter):
    name = "max_instances_per_host"
    description = "Removes hosts that already run max_instances_per_host consumers."
    needs_instance_counts = True

    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict:
        count = host.num_instances or 0
        if count < context.max_instances_per_host:
            return PASS
        return reject(f"max instances: {count} on host, limit is {context.max_instances_per_host}")
