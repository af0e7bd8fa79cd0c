"""Consumer counts per host, for the plugins that read ``host.num_instances``.

Counted over each host's whole tree: a consumer on the root or any descendant
counts once. Read from Placement through the directory (one read per provider, cached and
kept current for this scheduler's own claims), once per list of candidate
hosts however many plugins ask.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.placement.host_state import HostState
from scheduler.plugins.cycle import Cycle, StateKey

COUNTED = StateKey[Sequence[HostState]]("instance_counts.counted")


async def count_instances(hosts: Sequence[HostState], cycle: Cycle) -> None:
    if cycle.state.get(COUNTED) is hosts:
        return
    counts = await cycle.facts.consumer_counts([host.uuid for host in hosts])
    for host in hosts:
        host.num_instances = counts[host.uuid]
    cycle.state.write(COUNTED, hosts)
