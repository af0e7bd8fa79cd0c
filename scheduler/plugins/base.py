"""The two plugin interfaces: a filter gives a verdict with a reason, a weigher a raw number.

Filters and weighers are small stateless classes. The pipeline decides order,
normalisation, multipliers and the explanation; plugins only judge one host.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState, free_per_host


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    reason: str = ""


PASS = Verdict(passed=True)


def reject(reason: str) -> Verdict:
    return Verdict(passed=False, reason=reason)


class HostFilter(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # Forced hosts skip filters, except the ones that say which hosts are forced or ignored.
    runs_on_forced_hosts: ClassVar[bool] = False
    # Instance counts cost a Placement read per host; only fetched when a plugin needs them.
    needs_instance_counts: ClassVar[bool] = False

    def applies(self, context: SchedulingContext) -> bool:
        """False when the request gives this filter nothing to check, so every host
        would pass: the pipeline then passes them without asking one by one."""
        return True

    @abstractmethod
    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict: ...


class HostWeigher(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # Resource weighers flip sign when the strategy is "pack".
    follows_strategy: ClassVar[bool] = False
    needs_instance_counts: ClassVar[bool] = False

    def applies(self, context: SchedulingContext) -> bool:
        """False when every host would weigh 0 for this request (nothing is asked)."""
        return True

    @abstractmethod
    def raw_weight(self, host: HostState, context: SchedulingContext) -> float: ...

    def raw_weights(self, hosts: Sequence[HostState], context: SchedulingContext) -> list[float]:
        """``raw_weight`` of every host; a weigher may work them out in one pass."""
        return [self.raw_weight(host, context) for host in hosts]


class FreeResourceWeigher(HostWeigher):
    """Weighs the free amount of one resource class across the host's tree."""

    resource_class: ClassVar[str]
    follows_strategy = True

    def raw_weight(self, host: HostState, context: SchedulingContext) -> float:
        return float(host.free(self.resource_class))

    def raw_weights(self, hosts: Sequence[HostState], context: SchedulingContext) -> list[float]:
        return free_per_host(hosts, self.resource_class)
