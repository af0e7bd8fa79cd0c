"""``soft-affinity`` groups prefer hosts with more members already."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import HostWeigher
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import GroupPolicy


class ServerGroupSoftAffinityWeigher(HostWeigher):
    name = "server_group_soft_affinity"
    description = "For soft-affinity groups, each member already on the host weighs more."

    def applies(self, context: Cycle) -> bool:
        group = context.group
        return group is not None and group.policy == GroupPolicy.SOFT_AFFINITY

    def raw_weight(self, host: HostState, context: Cycle) -> float:
        group = context.group
        if group is None or group.policy != GroupPolicy.SOFT_AFFINITY:
            return 0.0
        return float(context.group_hosts.get(host.uuid, 0))
