"""``hints.different_host``: the host must run none of the named consumers
(where they run is read from Placement when the request is prepared)."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle, StateKey

# host uuid -> the named consumers with allocations there
TARGETS = StateKey[dict[str, set[str]]]("different_host.targets")


class DifferentHostFilter(HostFilter):
    name = "different_host"
    description = "Removes hosts running any of the consumers in hints.different_host."

    async def prepare(self, cycle: Cycle) -> None:
        if cycle.spec.hints.different_host:
            consumers = (str(c) for c in cycle.spec.hints.different_host)
            cycle.state.write(TARGETS, await cycle.facts.hosts_of_consumers(consumers))

    def applies(self, context: Cycle) -> bool:
        return bool(context.state.get(TARGETS))

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        here = context.state.read(TARGETS).get(host.uuid)
        if not here:
            return PASS
        return reject(f"different_host: consumer {', '.join(sorted(here))} runs here")
