"""When Placement returns no candidates: how many hosts fail each term of the query,
as Kubernetes says "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) didn't
match selector".

One ``GET /resource_providers`` lists the hosts (roots of trees that are not only
sharing providers), then one per term lists the providers that match it alone; a
host passes a term when a provider of its tree matches. Terms: each resource
class's amount (providers with that much free), each required trait, each
forbidden trait (a host fails when a provider of its tree has it), each
``member_of`` (and forbidden aggregates), ``in_tree``; for every request group,
named with the group's suffix. Only run on the failure path.
"""

from __future__ import annotations

from collections.abc import Iterator

from flavors.request_group import RequestGroup
from placement_client import PlacementError
from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.query import not_member_of_param
from scheduler.request.spec import ResourceRequest

SHARING = "MISC_SHARES_VIA_AGGREGATE"

# (the term as the query names it, the provider query, True: matching hosts fail it)
Probe = tuple[str, dict[str, str], bool]


def probes(group: RequestGroup) -> Iterator[Probe]:
    suffix = group.suffix
    for rc, amount in sorted(group.resources.items()):
        yield f"resources{suffix}={rc}:{amount}", {"resources": f"{rc}:{amount}"}, False
    for trait in sorted(group.required):
        yield f"required{suffix}={trait}", {"required": trait}, False
    for trait in sorted(group.forbidden):
        yield f"required{suffix}=!{trait}", {"required": trait}, True
    for any_of in group.member_of:
        aggregates = "in:" + ",".join(any_of)
        yield f"member_of{suffix}={aggregates}", {"member_of": aggregates}, False
    if group.not_member_of:
        forbidden = sorted(group.not_member_of)
        term = f"member_of{suffix}={not_member_of_param(group.not_member_of)}"
        yield term, {"member_of": "in:" + ",".join(forbidden)}, True
    if group.in_tree:
        yield f"in_tree{suffix}={group.in_tree}", {"in_tree": group.in_tree}, False


async def _hosts(client: SchedulerPlacement, query: dict[str, str]) -> set[str]:
    body = await client.client.get("/resource_providers", params=query)
    return {rp["root_provider_uuid"] for rp in body["resource_providers"]}


async def failing_terms(
    client: SchedulerPlacement, request: ResourceRequest
) -> tuple[list[tuple[str, int]], str]:
    """(term, hosts failing it) per term, and the sentence that sums it up
    (``0/5 hosts are available: 3 fail resources=VCPU:30, 2 fail required=X``)."""
    try:
        hosts = await _hosts(client, {"required": f"!{SHARING}"})
        found = []
        for group in request.groups:
            for term, query, matching_fail in probes(group):
                matching = await _hosts(client, query) & hosts
                failing = matching if matching_fail else hosts - matching
                found.append((term, len(failing)))
    except PlacementError as exc:
        return [], f"host counts stopped: {exc}"
    reasons = ", ".join(f"{hosts} fail {term}" for term, hosts in found if hosts)
    return found, f"0/{len(hosts)} hosts are available" + (f": {reasons}" if reasons else "")
