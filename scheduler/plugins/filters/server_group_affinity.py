"""Server group with policy ``affinity``: once a member is placed, every other
member goes to a host that already has one."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import GroupPolicy


class ServerGroupAffinityFilter(HostFilter):
    name = "server_group_affinity"
    description = "Keeps hosts that already run a member of the request's affinity group."

    def applies(self, context: Cycle) -> bool:
        group = context.group
        return group is not None and group.policy == GroupPolicy.AFFINITY

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        group = context.group
        if group is None or group.policy != GroupPolicy.AFFINITY:
            return PASS
        occupied = {h for h, members in context.group_hosts.items() if members > 0}
        if not occupied or host.uuid in occupied:
            return PASS
        return reject(f"affinity: group {group.label} is on {context.names_of(occupied)}")
