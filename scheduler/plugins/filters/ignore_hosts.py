"""Drop the hosts a request names in ``hints.ignore_hosts`` (names compare case-blind)."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle


class IgnoreHostsFilter(HostFilter):
    name = "ignore_hosts"
    description = "Removes the hosts listed in hints.ignore_hosts."
    runs_on_forced_hosts = True

    def applies(self, context: Cycle) -> bool:
        return bool(context.hints.ignore_hosts)

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        ignored = {name.casefold() for name in context.hints.ignore_hosts}
        if host.name.casefold() in ignored:
            return reject(f"ignore_hosts: the request ignores {host.name}")
        return PASS
