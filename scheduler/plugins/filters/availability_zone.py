"""A host's availability zone is the one its configured aggregates name, or the
default zone (see ``settings.aggregates``).

As Nova's request filter does, the zone becomes a term of the candidates
query, so ``limit`` cannot hide the hosts of the zone: ``member_of`` the
aggregates naming it, or, for the default zone, not a member of those naming
another. The verdict then only confirms what Placement already selected."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle


class AvailabilityZoneFilter(HostFilter):
    name = "availability_zone"
    description = "Keeps hosts in the requested availability zone."

    async def prepare(self, cycle: Cycle) -> None:
        wanted = cycle.spec.availability_zone
        if wanted is None:
            return
        zones = {
            uuid: config.availability_zone
            for uuid, config in cycle.settings.aggregates.items()
            if config.availability_zone
        }
        terms = cycle.terms
        if wanted == cycle.settings.default_availability_zone:
            elsewhere = sorted(uuid for uuid, zone in zones.items() if zone != wanted)
            if elsewhere:
                terms.not_member_of.update(elsewhere)
                terms.why.append(f"availability zone {wanted}: member_of=!in:{','.join(elsewhere)}")
            return
        inside = tuple(sorted(uuid for uuid, zone in zones.items() if zone == wanted))
        if not inside:
            cycle.refuse(f"no aggregate is configured for availability zone {wanted}")
        terms.member_of.append(inside)
        terms.why.append(f"availability zone {wanted}: member_of=in:{','.join(inside)}")

    def applies(self, context: Cycle) -> bool:
        return context.availability_zone is not None

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        wanted = context.availability_zone
        if wanted is None or host.availability_zone == wanted:
            return PASS
        return reject(f"availability zone: host is in {host.availability_zone}, not {wanted}")
