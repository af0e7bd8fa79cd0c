"""What Placement's request language cannot say about a guest's CPUs and pages.

- ``hw:cpu_thread_policy``: ``require`` needs a host with SMT (``HW_CPU_HYPERTHREADING``
  on its root, from the agent); ``isolate`` a host without it, since this scheduler does
  not reserve the sibling threads of pinned CPUs; ``prefer`` takes any host.
- Huge pages: a guest cell's pages must come from one host cell. A host that reports its
  pages on the root only (no NUMA providers) sums its cells' pools, so a fit there may
  be a split; such a host is refused for a request asking huge pages.
"""

from __future__ import annotations

from dataclasses import dataclass

from flavors.hardware import thread_policy
from flavors.resource_names import HUGEPAGES_PREFIX
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle, StateKey
from scheduler.request.spec import resource_request

SMT_TRAIT = "HW_CPU_HYPERTHREADING"


@dataclass(frozen=True)
class _Asked:
    thread_policy: str | None
    page_classes: frozenset[str]


ASKED: StateKey[_Asked] = StateKey("numa_topology.asked")


class NumaTopologyFilter(HostFilter):
    name = "numa_topology"
    description = "Checks CPU thread policy and per-cell huge pages, which Placement cannot."

    async def prepare(self, cycle: Cycle) -> None:
        spec = cycle.spec
        groups = resource_request(spec).groups
        pages = {
            rc for group in groups for rc in group.resources if rc.startswith(HUGEPAGES_PREFIX)
        }
        policy = thread_policy(spec.extra_specs, spec.image)
        cycle.state.write(ASKED, _Asked(policy, frozenset(pages)))

    def applies(self, context: Cycle) -> bool:
        asked = context.state.get(ASKED)
        if asked is None:
            return False
        return asked.thread_policy in ("require", "isolate") or bool(asked.page_classes)

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        asked = context.state.read(ASKED)
        smt = SMT_TRAIT in host.traits
        if asked.thread_policy == "require" and not smt:
            return reject(f"hw:cpu_thread_policy=require: host has no SMT ({SMT_TRAIT})")
        if asked.thread_policy == "isolate" and smt:
            return reject(
                f"hw:cpu_thread_policy=isolate: host has SMT ({SMT_TRAIT}) and sibling "
                "threads are not reserved"
            )
        for page_class in sorted(asked.page_classes):
            carriers = [rp for rp in host.tree if host.book.usage(rp, page_class) is not None]
            if carriers == [host.uuid]:
                return reject(
                    f"{page_class}: the host reports its huge pages for the whole host, not per "
                    "NUMA cell (agent numa_providers off), so a fit could split a guest cell"
                )
        return PASS
