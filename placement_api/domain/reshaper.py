"""The reshaper: replace the inventories of several providers and the
allocations of the affected consumers in one transaction.

Inventory cannot be removed while allocated, and allocations cannot land on
inventory that does not exist yet, so the inventories change in two steps
around the allocation write (``domain/claims.py``):

1. *interim*: add and change inventories, remove nothing. A changed
   inventory may briefly hold more than its new capacity;
2. the allocations are replaced, checked against the interim inventories;
3. *final*: remove the inventories that are no longer wanted, refusing any
   that is still allocated.

Every provider involved is locked up front, in the same order as any other
allocation write (consumers, then providers by id), and the generations the
client sent are compared under those locks. Generations then advance as the
three steps above count them — one per step that touched the provider — so
clients see the same numbers OpenStack Placement reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.models import Inventory, ResourceClass, ResourceProvider
from placement_api.domain import changes, claim_changes, claims, inventories, resource_classes
from placement_api.domain.capacity import InventoryLimits
from placement_api.domain.consumers import ConsumerClaim
from placement_api.domain.timestamps import now

FAILURE = "malformed reshaper data"


@dataclass(frozen=True)
class InventoryReshape:
    """The whole new inventory of one provider, and the generation the client saw."""

    uuid: str
    generation: int
    inventories: Mapping[str, InventoryLimits]


async def _target_ids(
    session: AsyncSession, reshapes: Sequence[InventoryReshape]
) -> dict[str, int]:
    uuids = [reshape.uuid for reshape in reshapes]
    rows = await session.execute(
        select(ResourceProvider.uuid, ResourceProvider.id).where(ResourceProvider.uuid.in_(uuids))
    )
    found = dict(rows.all())
    for uuid in uuids:
        if uuid not in found:
            raise errors.BadRequest(
                f"Resource provider {uuid} in inventories not found: "
                f"No resource provider with uuid {uuid} found",
                code=errors.PROVIDER_NOT_FOUND,
            )
    return found


async def _class_ids(session: AsyncSession, reshapes: Sequence[InventoryReshape]) -> dict[str, int]:
    names = {name for reshape in reshapes for name in reshape.inventories}
    found = await resource_classes.ids_by_name(session, names)
    unknown = sorted(names - found.keys())
    if unknown:
        raise errors.BadRequest(f"{FAILURE}: No such resource class {unknown[0]}.")
    return found


def _check_limits(reshapes: Sequence[InventoryReshape]) -> None:
    for reshape in reshapes:
        for name, limits in reshape.inventories.items():
            if limits.reserved > limits.total:
                raise errors.BadRequest(
                    f"Unable to update inventory for resource provider {reshape.uuid}: "
                    f"Invalid inventory for '{name}' on resource provider '{reshape.uuid}'. "
                    "The reserved value is greater than total."
                )


def _check_generations(
    reshapes: Sequence[InventoryReshape], targets: dict[str, int], current: dict[int, int]
) -> None:
    for reshape in reshapes:
        actual = current[targets[reshape.uuid]]
        if actual != reshape.generation:
            raise errors.ConcurrentUpdate(
                f"resource provider generation conflict for provider {reshape.uuid}: "
                f"actual: {actual}, given: {reshape.generation}",
                conflict=errors.CONFLICT_PROVIDER_GENERATION,
            )


@dataclass(frozen=True)
class _Held:
    id: int
    used: int


async def _inventory_rows(session: AsyncSession, provider_id: int) -> dict[str, _Held]:
    # Plain columns, not ORM objects: the identity map would hand back stale usage.
    rows = await session.execute(
        select(ResourceClass.name, Inventory.id, Inventory.used)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(Inventory.resource_provider_id == provider_id)
    )
    return {name: _Held(inventory_id, used) for name, inventory_id, used in rows}


async def _add_and_change(
    session: AsyncSession,
    provider_id: int,
    wanted: Mapping[str, InventoryLimits],
    class_ids: dict[str, int],
) -> None:
    """The interim step: the union of old and new inventories; usage is kept."""
    existing = await _inventory_rows(session, provider_id)
    for name, limits in wanted.items():
        if name in existing:
            await inventories.set_limits(session, existing[name].id, limits)
        else:
            await inventories.insert_inventory(session, provider_id, class_ids[name], limits)


async def _remove_unwanted(
    session: AsyncSession, provider_id: int, reshape: InventoryReshape
) -> None:
    """The final step: drop the inventories not asked for, unless still allocated."""
    existing = await _inventory_rows(session, provider_id)
    unwanted = {name: row for name, row in existing.items() if name not in reshape.inventories}
    in_use = sorted(name for name, row in unwanted.items() if row.used > 0)
    if in_use:
        raise inventories.in_use_conflict("update conflict: ", reshape.uuid, in_use)
    await inventories.remove(session, (row.id for row in unwanted.values()))


def _generation_steps(
    reshapes: Sequence[InventoryReshape], targets: dict[str, int], plan: claims.ClaimPlan
) -> Counter[int]:
    """How many of the three steps touched each provider."""
    steps: Counter[int] = Counter(plan.touched_provider_ids())
    for reshape in reshapes:
        provider_id = targets[reshape.uuid]
        steps[provider_id] += 2 if reshape.inventories else 1
    return steps


async def _advance_generations(session: AsyncSession, steps: Counter[int]) -> None:
    by_count: dict[int, list[int]] = {}
    for provider_id, count in steps.items():
        by_count.setdefault(count, []).append(provider_id)
    for count, ids in by_count.items():
        await session.execute(
            update(ResourceProvider)
            .where(ResourceProvider.id.in_(ids))
            .values(generation=ResourceProvider.generation + count, updated_at=now())
        )


async def reshape(
    session: AsyncSession,
    reshapes: Sequence[InventoryReshape],
    allocations: Sequence[ConsumerClaim],
) -> None:
    targets = await _target_ids(session, reshapes)
    class_ids = await _class_ids(session, reshapes)
    _check_limits(reshapes)
    plan = await claims.prepare(session, allocations, failure=FAILURE)
    names = plan.provider_uuids | {pid: uuid for uuid, pid in targets.items()}
    locked = set(targets.values()) | plan.touched_provider_ids()
    current = await claims.lock_providers(session, locked, bump=False, names=names)
    _check_generations(reshapes, targets, current)
    for item in reshapes:
        await _add_and_change(session, targets[item.uuid], item.inventories, class_ids)
    usage_after, _ = await claims.write(session, plan)
    for item in reshapes:
        await _remove_unwanted(session, targets[item.uuid], item)
    steps = _generation_steps(reshapes, targets, plan)
    await _advance_generations(session, steps)
    await _record(
        session, reshapes, plan, usage_after, {pid: current[pid] + steps[pid] for pid in current}
    )


async def _record(
    session: AsyncSession,
    reshapes: Sequence[InventoryReshape],
    plan: claims.ClaimPlan,
    usage_after: dict[claims.Slot, int],
    generations: dict[int, int],
) -> None:
    """Each provider's whole inventory after the reshape, then each consumer's allocations."""
    for item in reshapes:
        after = await inventories.read(session, item.uuid)
        limits = {name: record.limits for name, record in after.inventories.items()}
        changes.inventory_changed(
            session, changes.UPDATED, item.uuid, after.generation, limits, item.inventories
        )
    claim_changes.allocations_changed(session, plan, usage_after, generations)
