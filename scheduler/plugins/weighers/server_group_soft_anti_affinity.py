"""``soft-anti-affinity`` groups prefer hosts with fewer members."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import HostWeigher
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import GroupPolicy


class ServerGroupSoftAntiAffinityWeigher(HostWeigher):
    name = "server_group_soft_anti_affinity"
    description = "For soft-anti-affinity groups, each member already on the host weighs less."

    def applies(self, context: Cycle) -> bool:
        group = context.group
        return group is not None and group.policy == GroupPolicy.SOFT_ANTI_AFFINITY

    def raw_weight(self, host: HostState, context: Cycle) -> float:
        group = context.group
        if group is None or group.policy != GroupPolicy.SOFT_ANTI_AFFINITY:
            return 0.0
        return -float(context.group_hosts.get(host.uuid, 0))
