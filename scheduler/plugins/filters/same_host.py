"""``hints.same_host``: the host must run at least one of the named consumers
(where they run is read from their allocations in Placement)."""

from __future__ import annotations

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject


class SameHostFilter(HostFilter):
    name = "same_host"
    description = "Keeps hosts running one of the consumers in hints.same_host."

    def applies(self, context: SchedulingContext) -> bool:
        return bool(context.hints.same_host)

    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict:
        if not context.hints.same_host or host.uuid in context.same_host_targets:
            return PASS
        if not context.same_host_targets:
            return reject("same_host: none of the named consumers has allocations anywhere")
        where = context.names_of(context.same_host_targets)
        return reject(f"same_host: the named consumers run on {where}, not here")
