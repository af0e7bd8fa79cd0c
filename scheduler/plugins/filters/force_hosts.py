"""Keep only forced hosts: ``force_hosts`` names hosts (root provider names),
``force_nodes`` names root providers by name or uuid; given both, a host must
match both. When a request forces hosts, the other filters do not run.

As Nova does, the query cannot cut a forced host off: one forced host becomes
``in_tree`` (a name Placement does not know fails the request at once);
several lift ``limit``."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle


class ForceHostsFilter(HostFilter):
    name = "force_hosts"
    description = "Keeps only the hosts named in hints.force_hosts / hints.force_nodes."
    runs_on_forced_hosts = True

    async def prepare(self, cycle: Cycle) -> None:
        hints = cycle.spec.hints
        targets = hints.force_nodes or hints.force_hosts
        if len(targets) > 1:
            cycle.terms.unlimited = True
            cycle.terms.why.append(f"forced hosts {', '.join(targets)}: no limit")
            return
        if not targets:
            return
        target = targets[0]
        found = target if target in await cycle.facts.providers() else None
        found = found or await cycle.facts.uuid_named(target)
        if found is None:
            cycle.refuse(f"forced host {target} is not a resource provider in Placement")
        cycle.terms.in_tree = found
        cycle.terms.why.append(f"forced host {target}: in_tree={found}")

    def applies(self, context: Cycle) -> bool:
        return context.forced

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        hints = context.hints
        name = host.name.casefold()
        hosts = {forced.casefold() for forced in hints.force_hosts}
        nodes = {forced.casefold() for forced in hints.force_nodes}
        if hosts and name not in hosts:
            return reject(f"force_hosts: not one of {', '.join(hints.force_hosts)}")
        if nodes and name not in nodes and host.uuid not in nodes:
            return reject(f"force_nodes: not one of {', '.join(hints.force_nodes)}")
        return PASS
