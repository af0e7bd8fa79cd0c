"""What the response says about each provider involved: capacity, usage, traits, tree.

Loaded in bulk (three statements per batch of providers or trees), only for
the providers the returned candidates involve.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.models import (
    Inventory,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import fetch_all, id_batches, id_in


@dataclass
class ProviderSummary:
    uuid: str
    parent_uuid: str | None
    root_uuid: str
    # Class name -> {"capacity": ..., "used": ...}, as the response shows it.
    resources: dict[str, dict[str, int]] = field(default_factory=dict)
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
) -> dict[int, tuple[str, int | None, int | None]]:
    """Provider id -> (uuid, parent id, root id)."""
    rows = await fetch_all(
        session,
        select(
            ResourceProvider.id,
            ResourceProvider.uuid,
            ResourceProvider.parent_provider_id,
            ResourceProvider.root_provider_id,
        ).where(scope.condition(session, batch)),
    )
    return {ident: (uuid, parent, root) for ident, uuid, parent, root in rows}


async def _uuids_of(session: AsyncSession, ids: set[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for batch in id_batches(session, ids):
        rows = await fetch_all(
            session,
            select(ResourceProvider.id, ResourceProvider.uuid).where(
                id_in(session, ResourceProvider.id, batch)
            ),
        )
        found.update((ident, uuid) for ident, uuid in rows)
    return found


async def _summaries(session: AsyncSession, scope: SummaryScope) -> dict[int, ProviderSummary]:
    """Bare summaries (tree position only), parents and roots named by uuid."""
    providers: dict[int, tuple[str, int | None, int | None]] = {}
    for batch in id_batches(session, scope.ids):
        providers.update(await _providers(session, scope, batch))
    uuids = {ident: uuid for ident, (uuid, _, _) in providers.items()}
    # Whole trees hold every parent and root; single providers may not.
    related = {i for _, parent, root in providers.values() for i in (parent, root) if i}
    if related - uuids.keys():
        uuids.update(await _uuids_of(session, related - uuids.keys()))
    return {
        ident: ProviderSummary(
            uuid=uuid,
            parent_uuid=uuids[parent] if parent else None,
            root_uuid=uuids[root or ident],
        )
        for ident, (uuid, parent, root) in sorted(providers.items())
    }


async def _add_resources(
    session: AsyncSession, scope: SummaryScope, summaries: dict[int, ProviderSummary]
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
        .where(id_in(session, Inventory.resource_provider_id, list(summaries)))
        .order_by(Inventory.resource_class_id)
    )
    if scope.class_ids is not None:
        statement = statement.where(Inventory.resource_class_id.in_(sorted(scope.class_ids)))
    resources = {ident: summary.resources for ident, summary in summaries.items()}
    for provider, name, total, reserved, ratio, used in await fetch_all(session, statement):
        resources[provider][name] = {"capacity": int((total - reserved) * ratio), "used": used}


async def _add_traits(session: AsyncSession, summaries: dict[int, ProviderSummary]) -> None:
    rows = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id, Trait.name)
        .join(Trait, Trait.id == ProviderTrait.trait_id)
        .where(id_in(session, ProviderTrait.resource_provider_id, list(summaries)))
        .order_by(Trait.id),
    )
    for provider, name in rows:
        summaries[provider].traits.append(name)


async def load_summaries(session: AsyncSession, scope: SummaryScope) -> dict[int, ProviderSummary]:
    """Provider id -> summary, for every provider in the scope."""
    summaries = await _summaries(session, scope)
    for batch in id_batches(session, summaries):
        found = {ident: summaries[ident] for ident in batch}
        await _add_resources(session, scope, found)
        if scope.with_traits:
            await _add_traits(session, found)
    return summaries
