"""The change feed's entries of an allocation write: one per consumer, with
its allocations, usages and provider generations after the write."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain import changes
from placement_api.domain.claim_plan import ClaimPlan, Slot


def allocations_changed(
    session: AsyncSession,
    plan: ClaimPlan,
    usage_after: Mapping[Slot, int],
    generations: Mapping[int, int],
) -> None:
    """One change per consumer of an allocation write: its allocations after,
    and the usage and generation after of every provider it touched."""
    changes.queue(
        session,
        _allocation_entries(plan, lambda slot: usage_after.get(slot, 0), generations.__getitem__),
    )


@dataclass(frozen=True)
class EntryTemplate:
    """A change for the statement that applies the write to insert itself
    (``claim_sql``): ``details`` is a ``format()`` string whose ``%s`` take,
    in order, the usage after of every slot the consumer touched (by
    provider id, then class id), then the generation after of every provider
    it touched (by id)."""

    resource: str
    action: str
    uuid: str
    details: str


# What json.dumps writes for a number left to the statement: "\u0000", which
# no provider uuid or class name holds (PostgreSQL text cannot hold a NUL).
_NUMBER = "\x00"
_NUMBER_JSON = json.dumps(_NUMBER)


def allocation_template(plan: ClaimPlan) -> EntryTemplate | None:
    """The change of a one-consumer write, built by the same code as
    ``allocations_changed``'s and written out the same way (compact JSON),
    with the numbers only the write's statement knows left as ``%s``. None
    when the write records no single change."""
    if len(plan.claims) != 1:
        return None
    entries = list(_allocation_entries(plan, lambda _slot: _NUMBER, lambda _id: _NUMBER))
    if len(entries) != 1:
        return None
    (entry,) = entries
    details = json.dumps(entry.details, separators=(",", ":")).replace("%", "%%")
    return EntryTemplate(
        entry.resource, entry.action, entry.uuid, details.replace(_NUMBER_JSON, "%s")
    )


def _allocation_entries(
    plan: ClaimPlan, usage_of: Callable[[Slot], object], generation_of: Callable[[int], object]
) -> Iterator[changes.Entry]:
    providers, classes = plan.provider_uuids, plan.class_names
    wanted = plan.wanted()
    slots_of: dict[int, set[Slot]] = defaultdict(set)
    for row in (*plan.held, *wanted):
        slots_of[row.consumer_id].add(row.slot)
    after_of: dict[int, dict[str, dict[str, int]]] = defaultdict(dict)
    for row in wanted:
        after = after_of[row.consumer_id].setdefault(providers[row.provider_id], {})
        after[classes[row.class_id]] = row.used
    for claim in plan.claims:
        consumer = plan.consumers.by_uuid[claim.uuid]
        if consumer.id is None:
            continue
        slots = sorted(slots_of[consumer.id])
        usages: dict[str, dict[str, object]] = {}
        for provider_id, class_id in slots:
            usages.setdefault(providers[provider_id], {})[classes[class_id]] = usage_of(
                (provider_id, class_id)
            )
        if consumer.created:
            action, generation = changes.CREATED, 1
        elif not claim.allocations:
            action, generation = changes.DELETED, None
        else:
            action, generation = changes.UPDATED, (consumer.generation or 0) + 1
        details = {
            "generation": generation,
            "allocations": after_of[consumer.id],
            "usages": usages,
            "resource_providers": {providers[pid]: generation_of(pid) for pid, _ in slots},
            "resource_classes": sorted({classes[cid] for _, cid in slots}),
        }
        yield changes.Entry(changes.ALLOCATION, action, claim.uuid, details)
