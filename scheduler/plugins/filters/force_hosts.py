"""Keep only forced hosts: ``force_hosts`` names hosts (root provider names),
``force_nodes`` names root providers by name or uuid; given both, a host must
match both. When a request forces hosts, the other filters do not run."""

from __future__ import annotations

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject


class ForceHostsFilter(HostFilter):
    name = "force_hosts"
    description = "Keeps only the hosts named in hints.force_hosts / hints.force_nodes."
    runs_on_forced_hosts = True

    def applies(self, context: SchedulingContext) -> bool:
        return context.forced

    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict:
        hints = context.hints
        name = host.name.casefold()
        hosts = {forced.casefold() for forced in hints.force_hosts}
        nodes = {forced.casefold() for forced in hints.force_nodes}
        if hosts and name not in hosts:
            return reject(f"force_hosts: not one of {', '.join(hints.force_hosts)}")
        if nodes and name not in nodes and host.uuid not in nodes:
            return reject(f"force_nodes: not one of {', '.join(hints.force_nodes)}")
        return PASS
