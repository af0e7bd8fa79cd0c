"""What one window's search is given, besides the rows: each group's plan
(its slots and their options per anchor tree), and what the sharing
providers the rows name serve (the trees, by aggregate) and may not serve
(the groups' tree rules).
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates import lookups
from placement_api.domain.candidates.combinations import GroupPlan
from placement_api.domain.candidates.names import ResolvedGroup, ResolvedRequest
from placement_api.domain.candidates.options import (
    SharingMap,
    TreeRule,
    granular_options,
    unsuffixed_options,
)
from placement_api.domain.candidates.provider_filters import Window

Rows = list[tuple[int, int]] | list[tuple[int, int, int]]


def group_plan(
    group: ResolvedGroup,
    rows: Rows,
    sharing: SharingMap,
    rule: TreeRule,
    window: Window | None,
) -> GroupPlan:
    """The group's slots and their options, for the trees of ``window`` only
    (sharing providers would otherwise spread over every tree they serve)."""
    class_ids = sorted(group.amounts)
    if group.granular:
        return GroupPlan(
            suffix=group.suffix,
            granular=True,
            slots=(tuple((c, group.amounts[c]) for c in class_ids),),
            options=granular_options(
                cast(list[tuple[int, int]], rows), sharing, rule, within=window
            ),
        )
    return replace(
        unsuffixed_plan(group),
        options=unsuffixed_options(
            cast(list[tuple[int, int, int]], rows),
            class_ids,
            sharing,
            rule,
            member_of=group.member_of,
            in_tree=group.tree_root is not None,
            within=window,
        ),
    )


def unsuffixed_plan(group: ResolvedGroup) -> GroupPlan:
    """The unsuffixed group's plan, without options: one slot per class."""
    return GroupPlan(
        suffix=group.suffix,
        granular=False,
        slots=tuple(((c, group.amounts[c]),) for c in sorted(group.amounts)),
        options={},
        required=group.required,
    )


async def sharing_map(
    session: AsyncSession, used: frozenset[int], window: Window | None
) -> SharingMap:
    if not used:
        return SharingMap()
    aggregates = await lookups.aggregates_of(session, used)
    roots = await lookups.roots_by_aggregate(session, set().union(*aggregates.values()), window)
    anchors = {
        provider: frozenset().union(*(roots.get(a, set()) for a in aggregates.get(provider, ())))
        for provider in used
    }
    return SharingMap(
        providers=used,
        anchors=anchors,
        aggregates={p: frozenset(aggs) for p, aggs in aggregates.items()},
    )


async def tree_rules(
    session: AsyncSession, request: ResolvedRequest, sharing: frozenset[int]
) -> list[TreeRule]:
    """Per group, the tree-level rules applied to the trees sharing providers serve."""
    base = TreeRule(root_required=request.root_required, root_forbidden=request.root_forbidden)
    if not sharing:
        return [base for _ in request.groups]
    root_traits = {}
    if request.root_required or request.root_forbidden:
        found = await lookups.roots_with_any_trait(
            session, request.root_required | request.root_forbidden
        )
        root_traits = {root: frozenset(traits) for root, traits in found.items()}
    rules = []
    for group in request.groups:
        banned: frozenset[int] = frozenset()
        if group.forbidden_aggregates and not group.granular:
            banned = await lookups.providers_in_aggregates(session, group.forbidden_aggregates)
        rules.append(TreeRule(base.root_required, base.root_forbidden, root_traits, banned))
    return rules
