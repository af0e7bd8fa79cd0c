"""Where a request's server group runs, and the rule its claims ask Placement to keep.

Membership is Placement's (``GET /server_groups/{uuid}``, an extension of this
service): every claim of a group member names the group, and Placement checks
the rule in the claim's own transaction (docs/server-groups.md). So what every
scheduler process sees is the same, survives restarts, and a decision made on a
view that another scheduler's claim outdated is refused, not written; the engine
then reads the group again and decides again. Members the caller names in
``hints.group.members`` are located through their allocations too.
"""

from __future__ import annotations

from collections import Counter

from scheduler.deciding.choosing import UnplaceableError
from scheduler.placement.client import GroupRule, SchedulerPlacement
from scheduler.placement.directory import ProviderDirectory
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import ScheduleRequest


def group_rule(spec: ScheduleRequest) -> GroupRule | None:
    group = spec.hints.group
    if group is None:
        return None
    return GroupRule(str(group.uuid), group.policy.value, group.max_server_per_host)


async def group_hosts(
    client: SchedulerPlacement, directory: ProviderDirectory, spec: ScheduleRequest
) -> Counter[str]:
    """host -> the group's members there, the request's own consumers left out (a move's
    consumer is a member already: it must not count against itself). A request naming
    the group with another rule than Placement keeps is refused."""
    group = spec.hints.group
    if group is None:
        return Counter()
    own = {str(c) for c in spec.consumer_uuids}
    members: dict[str, set[str]] = {}
    kept = await client.server_group(str(group.uuid))
    if kept is not None:
        rule = (kept.policy, kept.max_server_per_host)
        if rule != (group.policy.value, group.max_server_per_host):
            raise UnplaceableError(
                "request",
                f"server group {group.label} has policy {rule[0]} with max_server_per_host "
                f"{rule[1]} in Placement; the request names {group.policy.value} with "
                f"{group.max_server_per_host}",
            )
        for host, consumers in kept.hosts().items():
            members.setdefault(host, set()).update(consumers - own)
    known = {c for consumers in members.values() for c in consumers}
    unknown = [str(m) for m in group.members if str(m) not in known and str(m) not in own]
    for host, consumers in (await directory.hosts_of_consumers(unknown)).items():
        members.setdefault(host, set()).update(consumers)
    return Counter({host: len(consumers) for host, consumers in members.items() if consumers})


async def name_hosts(directory: ProviderDirectory, cycle: Cycle) -> None:
    """Hosts named in explanations may lie outside the candidates (a full host)."""
    unnamed = [host for host in cycle.group_hosts if host not in cycle.host_names]
    if unnamed:
        records = await directory.providers()
        for host in unnamed:
            if host in records:
                cycle.host_names[host] = records[host].name
