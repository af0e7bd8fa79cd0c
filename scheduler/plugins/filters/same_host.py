"""``hints.same_host``: the host must run at least one of the named consumers
(where they run is read from their allocations in Placement when the request
is prepared)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle, StateKey


@dataclass(frozen=True)
class SameHostTargets:
    hosts: frozenset[str]  # where the named consumers have allocations
    where: str  # those hosts' names, for the reason


TARGETS = StateKey[SameHostTargets]("same_host.targets")


class SameHostFilter(HostFilter):
    name = "same_host"
    description = "Keeps hosts running one of the consumers in hints.same_host."

    async def prepare(self, cycle: Cycle) -> None:
        if not cycle.spec.hints.same_host:
            return
        found = await cycle.facts.hosts_of_consumers(str(c) for c in cycle.spec.hints.same_host)
        records = await cycle.facts.providers(found)
        names = sorted(records[host].name if host in records else host for host in found)
        cycle.state.write(TARGETS, SameHostTargets(frozenset(found), ", ".join(names)))

    def applies(self, context: Cycle) -> bool:
        return TARGETS in context.state

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        targets = context.state.read(TARGETS)
        if host.uuid in targets.hosts:
            return PASS
        if not targets.hosts:
            return reject("same_host: none of the named consumers has allocations anywhere")
        return reject(f"same_host: the named consumers run on {targets.where}, not here")
