"""A host's availability zone is the one its configured aggregates name, or the
default zone (see ``settings.aggregates``)."""

from __future__ import annotations

from scheduler.deciding.context import SchedulingContext
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject


class AvailabilityZoneFilter(HostFilter):
    name = "availability_zone"
    description = "Keeps hosts in the requested availability zone."

    def applies(self, context: SchedulingContext) -> bool:
        return context.availability_zone is not None

    def verdict(self, host: HostState, context: SchedulingContext) -> Verdict:
        wanted = context.availability_zone
        if wanted is None or host.availability_zone == wanted:
            return PASS
        return reject(f"availability zone: host is in {host.availability_zone}, not {wanted}")
