"""The two plugin interfaces: a filter gives a verdict with a reason, a weigher a raw number.

Filters and weighers are small stateless classes. The pipeline decides order,
normalisation, multipliers and the explanation; plugins only judge one host.
A plugin that needs data besides the host state reads it in its ``prepare``
hooks into the request's cycle (see ``deciding.cycle``), and its verdict or
weight reads it from ``context.state``: the context is that same cycle.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from scheduler.placement.host_state import HostState, free_per_host
from scheduler.plugins.cycle import Cycle

# What plugins out of this tree import from here (docs/scheduler.md, "Writing a plugin").
__all__ = [
    "PASS",
    "HostFilter",
    "HostState",
    "HostWeigher",
    "SchedulingContext",
    "Verdict",
    "pass_noting",
    "reject",
]

# The name plugins' verdicts and weights were annotated with, kept for plugins out
# of this tree: the context they are given is the request's cycle.
SchedulingContext = Cycle


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    # Why a host was rejected; for a host that passes, a note the explanation lists.
    reason: str = ""


PASS = Verdict(passed=True)


def reject(reason: str) -> Verdict:
    return Verdict(passed=False, reason=reason)


def pass_noting(note: str) -> Verdict:
    return Verdict(passed=True, reason=note)


class Plugin:
    name: ClassVar[str]
    description: ClassVar[str]

    async def prepare(self, cycle: Cycle) -> None:
        """Once per request, before Placement is asked: read what the plugin needs into
        ``cycle.state``, narrow the query (``cycle.terms``) or refuse the request."""

    async def prepare_hosts(self, hosts: Sequence[HostState], cycle: Cycle) -> None:
        """Each time the request's candidate hosts are read: per-host facts."""


class HostFilter(Plugin, ABC):
    # Forced hosts skip filters, except the ones that say which hosts are forced or ignored.
    runs_on_forced_hosts: ClassVar[bool] = False

    def applies(self, context: Cycle) -> bool:
        """False when the request gives this filter nothing to check, so every host
        would pass: the pipeline then passes them without asking one by one."""
        return True

    @abstractmethod
    def verdict(self, host: HostState, context: Cycle) -> Verdict: ...

    def verdicts(self, hosts: Sequence[HostState], context: Cycle) -> list[Verdict]:
        """``verdict`` of every host; a filter may judge them in one pass."""
        return [self.verdict(host, context) for host in hosts]


class HostWeigher(Plugin, ABC):
    # Resource weighers flip sign when the strategy is "pack".
    follows_strategy: ClassVar[bool] = False

    def applies(self, context: Cycle) -> bool:
        """False when every host would weigh 0 for this request (nothing is asked)."""
        return True

    @abstractmethod
    def raw_weight(self, host: HostState, context: Cycle) -> float: ...

    def raw_weights(self, hosts: Sequence[HostState], context: Cycle) -> list[float]:
        """``raw_weight`` of every host; a weigher may work them out in one pass."""
        return [self.raw_weight(host, context) for host in hosts]


class FreeResourceWeigher(HostWeigher):
    """Weighs the free amount of one resource class across the host's tree."""

    resource_class: ClassVar[str]
    follows_strategy = True

    def raw_weight(self, host: HostState, context: Cycle) -> float:
        return float(host.free(self.resource_class))

    def raw_weights(self, hosts: Sequence[HostState], context: Cycle) -> list[float]:
        return free_per_host(hosts, self.resource_class)
