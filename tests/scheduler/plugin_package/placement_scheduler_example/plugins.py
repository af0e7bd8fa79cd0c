"""A filter and a weigher written against the public plugin interface only."""

from __future__ import annotations

from scheduler.plugins.base import (
    PASS,
    HostFilter,
    HostState,
    HostWeigher,
    SchedulingContext,
    Verdict,
    reject,
)


class OnlyEvenNamesFilter(HostFilter):
    name = "only_even_names"
    description = "Keeps hosts whose name ends in an even digit."

    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict:
        if host.name[-1:].isdigit() and int(host.name[-1]) % 2 == 0:
            return PASS
        return reject(f"only_even_names: {host.name} does not end in an even digit")


class NameLengthWeigher(HostWeigher):
    name = "name_length"
    description = "Longer host names weigh more."

    def raw_weight(self, host: HostState, context: SchedulingContext) -> float:
        return float(len(host.name))
