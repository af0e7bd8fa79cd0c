"""``hints.different_host``: the host must run none of the named consumers."""

from __future__ import annotations

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject


class DifferentHostFilter(HostFilter):
    name = "different_host"
    description = "Removes hosts running any of the consumers in hints.different_host."

    def applies(self, context: SchedulingContext) -> bool:
        return bool(context.different_host_targets)

    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict:
        here = context.different_host_targets.get(host.uuid)
        if not here:
            return PASS
        return reject(f"different_host: consumer {', '.join(sorted(here))} runs here")
