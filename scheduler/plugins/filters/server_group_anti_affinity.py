"""Server group with policy ``anti-affinity``: no host gets more than
``max_server_per_host`` members (one unless the group says otherwise)."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import GroupPolicy


class ServerGroupAntiAffinityFilter(HostFilter):
    name = "server_group_anti_affinity"
    description = "Removes hosts that already run as many group members as the group allows."

    def applies(self, context: Cycle) -> bool:
        group = context.group
        return group is not None and group.policy == GroupPolicy.ANTI_AFFINITY

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        group = context.group
        if group is None or group.policy != GroupPolicy.ANTI_AFFINITY:
            return PASS
        members = context.group_hosts.get(host.uuid, 0)
        if members < group.max_server_per_host:
            return PASS
        if group.max_server_per_host == 1:
            return reject(f"anti-affinity: group {group.label} already on {host.name}")
        return reject(
            f"anti-affinity: group {group.label} has {members} members on {host.name}, "
            f"max_server_per_host is {group.max_server_per_host}"
        )
