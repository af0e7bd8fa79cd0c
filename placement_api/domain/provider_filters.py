"""SQL conditions that select providers by capacity, traits, aggregates and tree.

Each function returns a condition on ``ResourceProvider.id`` (or on a
given provider-id column), so provider listing and allocation candidates
compose the same building blocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import ColumnElement, Select, and_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from placement_api import errors
from placement_api.db.models import (
    Aggregate,
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.capacity import fits_clause
from placement_api.domain.filters import AggregateFilter, TraitFilter

ProviderIdColumn = InstrumentedAttribute[int] | InstrumentedAttribute[int | None]


async def resource_class_ids(session: AsyncSession, names: Iterable[str]) -> dict[str, int]:
    """Map class names to ids; an unknown name is a 400."""
    wanted = set(names)
    rows = await session.execute(
        select(ResourceClass.name, ResourceClass.id).where(ResourceClass.name.in_(wanted))
    )
    found = {name: class_id for name, class_id in rows.tuples()}
    missing = sorted(wanted - found.keys())
    if missing:
        raise errors.BadRequest(
            f"Invalid resource class in resources parameter: No such resource class {missing[0]}."
        )
    return found


async def trait_ids(session: AsyncSession, names: Iterable[str]) -> dict[str, int]:
    """Map trait names to ids; unknown names are a 400."""
    wanted = set(names)
    rows = await session.execute(select(Trait.name, Trait.id).where(Trait.name.in_(wanted)))
    found = {name: trait_id for name, trait_id in rows.tuples()}
    missing = sorted(wanted - found.keys())
    if missing:
        raise errors.BadRequest(f"No such trait(s): {', '.join(missing)}.")
    return found


async def filter_trait_ids(session: AsyncSession, traits: TraitFilter) -> dict[str, int]:
    """Map the names of a trait filter to ids, reporting unknown names as upstream does:
    the first unknown required trait alone, else every unknown forbidden trait."""
    rows = await session.execute(select(Trait.name, Trait.id).where(Trait.name.in_(traits.names)))
    found = {name: trait_id for name, trait_id in rows}
    for group in traits.any_of:
        unknown = sorted(group - found.keys())
        if unknown:
            raise errors.BadRequest(f"No such trait(s): {unknown[0]}.")
    missing = sorted(traits.forbidden - found.keys())
    if missing:
        raise errors.BadRequest(f"No such trait(s): {', '.join(missing)}.")
    return found


def with_capacity(
    amounts: Mapping[int, int], provider_id: ProviderIdColumn = ResourceProvider.id
) -> ColumnElement[bool]:
    """The provider can take ``amount`` more of each class id (min/max/step included)."""
    conditions = [
        provider_id.in_(
            select(Inventory.resource_provider_id).where(
                Inventory.resource_class_id == class_id, fits_clause(amount)
            )
        )
        for class_id, amount in amounts.items()
    ]
    return and_(true(), *conditions)


def with_traits(
    traits: TraitFilter, ids: Mapping[str, int], provider_id: ProviderIdColumn = ResourceProvider.id
) -> ColumnElement[bool]:
    conditions: list[ColumnElement[bool]] = []
    for group in traits.any_of:
        conditions.append(
            provider_id.in_(
                select(ProviderTrait.resource_provider_id).where(
                    ProviderTrait.trait_id.in_([ids[name] for name in group])
                )
            )
        )
    if traits.forbidden:
        conditions.append(
            provider_id.not_in(
                select(ProviderTrait.resource_provider_id).where(
                    ProviderTrait.trait_id.in_([ids[name] for name in traits.forbidden])
                )
            )
        )
    return and_(true(), *conditions)


def _in_aggregates(uuids: Iterable[str]) -> Select[int]:
    return (
        select(ProviderAggregate.resource_provider_id)
        .join(Aggregate, Aggregate.id == ProviderAggregate.aggregate_id)
        .where(Aggregate.uuid.in_(list(uuids)))
    )


def with_aggregates(
    aggregates: AggregateFilter, provider_id: ProviderIdColumn = ResourceProvider.id
) -> ColumnElement[bool]:
    conditions: list[ColumnElement[bool]] = [
        provider_id.in_(_in_aggregates(group)) for group in aggregates.any_of
    ]
    if aggregates.forbidden:
        conditions.append(provider_id.not_in(_in_aggregates(aggregates.forbidden)))
    return and_(true(), *conditions)


def in_tree_of(
    uuid: str, root_id: ProviderIdColumn = ResourceProvider.root_provider_id
) -> ColumnElement[bool]:
    tree_root = select(ResourceProvider.root_provider_id).where(ResourceProvider.uuid == uuid)
    return root_id.in_(tree_root.scalar_subquery())
