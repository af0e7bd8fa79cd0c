"""When Placement returns no candidates, find which part of the request matched nothing.

Probes, each a GET /allocation_candidates with ``limit=1``: every resource
amount alone; then the unnumbered group's resources together; then those
resources with each required trait, forbidden trait, aggregate list and
tree in turn. Only run on the failure path, so a no-valid-host answer costs
a few more requests and successful scheduling none.
"""

from __future__ import annotations

from flavors.request_group import RequestGroup
from placement_client import PlacementError
from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.query import QueryParams, not_member_of_param, resources_param
from scheduler.request.spec import ResourceRequest


async def diagnose(client: SchedulerPlacement, request: ResourceRequest) -> list[str]:
    try:
        findings = await _lone_amounts(client, request)
        if not findings:
            findings = await _unnumbered_constraints(client, request.unnumbered)
    except PlacementError as exc:
        return [f"diagnosis stopped: {exc}"]
    return findings or [
        "each part of the request matches some provider, but not all parts together "
        "(granular groups and group_policy combined)"
    ]


async def _any(client: SchedulerPlacement, params: QueryParams) -> bool:
    found = await client.allocation_candidates([*params, ("limit", "1")])
    return bool(found.allocation_requests)


async def _lone_amounts(client: SchedulerPlacement, request: ResourceRequest) -> list[str]:
    findings = []
    for group in request.groups:
        where = f" (request group {group.suffix})" if group.suffix else ""
        for resource_class, amount in sorted(group.resources.items()):
            if not await _any(client, [("resources", f"{resource_class}:{amount}")]):
                findings.append(f"no provider has {amount} {resource_class} free{where}")
    return findings


async def _unnumbered_constraints(client: SchedulerPlacement, group: RequestGroup) -> list[str]:
    if not group.resources:
        return []
    resources = resources_param(group.resources)
    base: QueryParams = [("resources", resources)]
    if not await _any(client, base):
        return [f"no provider tree has {resources} free at the same time"]
    probes: list[tuple[QueryParams, str]] = [
        ([("required", trait)], f"no provider with room for {resources} has trait {trait}")
        for trait in sorted(group.required)
    ]
    probes += [
        (
            [("required", f"!{trait}")],
            f"every provider with room for {resources} has forbidden trait {trait}",
        )
        for trait in sorted(group.forbidden)
    ]
    probes += [
        (
            [("member_of", "in:" + ",".join(any_of))],
            f"no provider with room for {resources} is in aggregate {' or '.join(any_of)}",
        )
        for any_of in group.member_of
    ]
    if group.not_member_of:
        probes.append(
            (
                [("member_of", not_member_of_param(group.not_member_of))],
                f"every provider with room for {resources} is in one of aggregates "
                f"{', '.join(sorted(group.not_member_of))}",
            )
        )
    if group.in_tree:
        probes.append(
            (
                [("in_tree", group.in_tree)],
                f"the tree of provider {group.in_tree} has no room for {resources}",
            )
        )
    return [finding for extra, finding in probes if not await _any(client, base + extra)]
