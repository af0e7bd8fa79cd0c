"""What the response says about each provider involved: capacity, usage, traits, tree.

Loaded in bulk (three statements per batch of providers or trees), only for
the providers the returned candidates involve.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from placement_api.db.models import (
    Inventory,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import chunked, fetch_all, id_in

_Parent = aliased(ResourceProvider, name="parent")
_Root = aliased(ResourceProvider, name="root")


@dataclass
class ProviderSummary:
    uuid: str
    parent_uuid: str | None
    root_uuid: str
    # Class name -> (capacity, used).
    resources: dict[str, tuple[int, int]] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SummaryScope:
    """Whole trees (by root id) or single providers (by id)."""

    ids: frozenset[int]
    whole_trees: bool
    class_ids: frozenset[int] | None = None
    with_traits: bool = True

    def condition(self, session: AsyncSession, batch: list[int]) -> ColumnElement[bool]:
        column = ResourceProvider.root_provider_id if self.whole_trees else ResourceProvider.id
        return id_in(session, column, batch)


async def _providers(
    session: AsyncSession, scope: SummaryScope, batch: list[int]
) -> dict[int, ProviderSummary]:
    rows = await fetch_all(
        session,
        select(ResourceProvider.id, ResourceProvider.uuid, _Parent.uuid, _Root.uuid)
        .outerjoin(_Parent, _Parent.id == ResourceProvider.parent_provider_id)
        .join(_Root, _Root.id == ResourceProvider.root_provider_id)
        .where(scope.condition(session, batch))
        .order_by(ResourceProvider.id),
    )
    return {
        ident: ProviderSummary(uuid=uuid, parent_uuid=parent, root_uuid=root)
        for ident, uuid, parent, root in rows
    }


async def _add_resources(
    session: AsyncSession,
    scope: SummaryScope,
    batch: list[int],
    summaries: dict[int, ProviderSummary],
) -> None:
    statement = (
        select(
            Inventory.resource_provider_id,
            ResourceClass.name,
            Inventory.total,
            Inventory.reserved,
            Inventory.allocation_ratio,
            Inventory.used,
        )
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .where(scope.condition(session, batch))
        .order_by(Inventory.resource_class_id)
    )
    if scope.class_ids is not None:
        statement = statement.where(Inventory.resource_class_id.in_(sorted(scope.class_ids)))
    for provider, name, total, reserved, ratio, used in await fetch_all(session, statement):
        summaries[provider].resources[name] = (int((total - reserved) * ratio), used)


async def _add_traits(
    session: AsyncSession,
    scope: SummaryScope,
    batch: list[int],
    summaries: dict[int, ProviderSummary],
) -> None:
    rows = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id, Trait.name)
        .join(Trait, Trait.id == ProviderTrait.trait_id)
        .join(ResourceProvider, ResourceProvider.id == ProviderTrait.resource_provider_id)
        .where(scope.condition(session, batch))
        .order_by(Trait.id),
    )
    for provider, name in rows:
        summaries[provider].traits.append(name)


async def load_summaries(session: AsyncSession, scope: SummaryScope) -> dict[int, ProviderSummary]:
    """Provider id -> summary, for every provider in the scope."""
    summaries: dict[int, ProviderSummary] = {}
    for batch in chunked(sorted(scope.ids)):
        found = await _providers(session, scope, batch)
        await _add_resources(session, scope, batch, found)
        if scope.with_traits:
            await _add_traits(session, scope, batch, found)
        summaries.update(found)
    return summaries
