"""A ``ResourceRequest`` written as the GET /allocation_candidates query (1.39).

Each request group becomes ``resources<suffix>``, ``required<suffix>``
(forbidden traits carry ``!``), one ``member_of<suffix>`` per any-of list
(``in:`` when it has several aggregates), forbidden aggregates as one
``member_of<suffix>=!in:...`` and ``in_tree<suffix>``.
"""

from __future__ import annotations

from urllib.parse import urlencode

from flavors.request_group import RequestGroup
from scheduler.request.spec import ResourceRequest

QueryParams = list[tuple[str, str]]


def candidates_query(request: ResourceRequest, limit: int | None) -> QueryParams:
    params: QueryParams = []
    for group in request.groups:
        params.extend(group_params(group))
    if request.group_policy is not None:
        params.append(("group_policy", request.group_policy))
    if limit is not None:
        params.append(("limit", str(limit)))
    return params


def group_params(group: RequestGroup) -> QueryParams:
    suffix = group.suffix
    params: QueryParams = []
    if group.resources:
        params.append((f"resources{suffix}", resources_param(group.resources)))
    traits = sorted(group.required) + [f"!{name}" for name in sorted(group.forbidden)]
    if traits:
        params.append((f"required{suffix}", ",".join(traits)))
    for any_of in group.member_of:
        value = any_of[0] if len(any_of) == 1 else "in:" + ",".join(any_of)
        params.append((f"member_of{suffix}", value))
    if group.not_member_of:
        params.append((f"member_of{suffix}", not_member_of_param(group.not_member_of)))
    if group.in_tree:
        params.append((f"in_tree{suffix}", group.in_tree))
    return params


def not_member_of_param(aggregates: frozenset[str]) -> str:
    return "!in:" + ",".join(sorted(aggregates))


def resources_param(resources: dict[str, int]) -> str:
    return ",".join(f"{name}:{amount}" for name, amount in sorted(resources.items()))


def query_string(params: QueryParams) -> str:
    return urlencode(params, safe=":,!")
