"""The SQL that reads the rows provider summaries are built from.

Only for the providers in a scope: their tree positions, traits and
inventories. On PostgreSQL a scope of a few of many providers is one
statement that probes by id and carries each provider's traits and
inventories as arrays (``probe``; decoded by the driver, not row by row in
Python). Other scopes, and all on SQLite, are read part by part
(``read_tables``): from whole tables when they cover most providers, else in
batches by id. ``summaries`` builds the summaries from these rows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Literal, NamedTuple, cast

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    Row,
    Select,
    any_,
    bindparam,
    func,
    literal_column,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY, array
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute, aliased
from sqlalchemy.util import LRUCache

from placement_api.db.driver import Source, Ts, fetch_all, id_in
from placement_api.db.engine_caches import caches_of
from placement_api.db.models import (
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import IdColumn, dialect_of, engine_of, id_batches
from placement_api.domain.capacity import shown_capacity

# When the summaries cover at least this share of all providers, PostgreSQL
# reads the tables whole: planning a probe by an array of thousands of ids
# costs more than reading (and skipping) the rows of the other providers.
WHOLE_TABLE_SHARE = 0.5
# On PostgreSQL, scopes of fewer ids (and not most providers) are read by one
# statement probing by id. Larger scopes are read part by part, where a
# per-provider probe for each part costs more than scans and batches.
PROBED_IN_ONE = 2000

Position = Row[int, str, int | None, int | None]
# Position, trait ids, [class id, used, capacity] per inventory.
Probed = tuple[int, str, int | None, int | None, Sequence[int], Sequence[Sequence[int]]]


@dataclass(frozen=True)
class SummaryScope:
    """Whole trees (by root id) or single providers (by id)."""

    ids: frozenset[int]
    whole_trees: bool
    class_ids: frozenset[int] | None = None
    with_traits: bool = True


def covers_most(estimated_providers: float, count: int) -> bool:
    return 0 < estimated_providers <= count / WHOLE_TABLE_SHARE


def probed(session: AsyncSession, count: int, estimated_providers: float) -> bool:
    """Whether summaries of ``count`` ids are read by one probing statement:
    on PostgreSQL, for a few of many providers."""
    return (
        session.get_bind().dialect.name == "postgresql"
        and count < PROBED_IN_ONE
        and not covers_most(estimated_providers, count)
    )


class Reader:
    """Reads rows of the providers in scope, probing by id or reading whole tables."""

    def __init__(self, session: AsyncSession, estimated_providers: float) -> None:
        self.session = session
        self.estimated_providers = estimated_providers

    def covers_most(self, count: int) -> bool:
        return covers_most(self.estimated_providers, count)

    async def rows(
        self, statement: Select[*Ts], column: IdColumn, ids: Collection[int]
    ) -> Sequence[Row[*Ts]]:
        """Rows whose ``column`` is in ``ids``, and maybe others: callers skip those."""
        if self.covers_most(len(ids)):
            return await fetch_all(self.session, statement)
        batches = [
            await fetch_all(self.session, statement.where(id_in(self.session, column, batch)))
            for batch in id_batches(self.session, ids)
        ]
        return batches[0] if len(batches) == 1 else [row for rows in batches for row in rows]


async def _names(
    source: Source,
    id_column: InstrumentedAttribute[int],
    name_column: InstrumentedAttribute[str],
) -> dict[int, str]:
    return {ident: name for ident, name in await fetch_all(source, select(id_column, name_column))}


_POSITIONS = select(
    ResourceProvider.id,
    ResourceProvider.uuid,
    ResourceProvider.parent_provider_id,
    ResourceProvider.root_provider_id,
).order_by(ResourceProvider.id)
_TRAITS = (
    select(ProviderTrait.resource_provider_id, Trait.name)
    .join(Trait, Trait.id == ProviderTrait.trait_id)
    .order_by(ProviderTrait.trait_id)
)


def _inventories(dialect: str, class_ids: frozenset[int] | None) -> Select[int, int, int, int]:
    statement = select(
        Inventory.resource_provider_id,
        Inventory.resource_class_id,
        shown_capacity(dialect),
        Inventory.used,
    ).order_by(Inventory.resource_provider_id, Inventory.resource_class_id)
    if class_ids is not None:
        statement = statement.where(Inventory.resource_class_id.in_(sorted(class_ids)))
    return statement


class Tables(NamedTuple):
    """Rows of the providers in a scope, and maybe of others (skipped when
    the summaries are built)."""

    # By id.
    positions: Sequence[Position]
    # (provider id, trait name), in trait id order.
    traits: Sequence[Row[int, str]]
    # (provider id, class id, capacity, used), in class id order per provider.
    inventories: Sequence[Row[int, int, int, int]]
    class_names: dict[int, str]


async def read_tables(reader: Reader, scope: SummaryScope) -> Tables:
    """The rows of the providers in scope, by id or from whole tables."""
    column = ResourceProvider.root_provider_id if scope.whole_trees else ResourceProvider.id
    positions = await reader.rows(_POSITIONS, column, scope.ids)
    if not reader.covers_most(len(scope.ids)):
        # Batches of ids each come in id order, but not together.
        positions = sorted(positions, key=itemgetter(0))
    providers = in_scope(positions, scope).keys()
    traits: Sequence[Row[int, str]] = ()
    if scope.with_traits:
        traits = await reader.rows(_TRAITS, ProviderTrait.resource_provider_id, providers)
    dialect = dialect_of(reader.session).name
    inventories = await reader.rows(
        _inventories(dialect, scope.class_ids), Inventory.resource_provider_id, providers
    )
    # Read after the rows, so every class they name had been created; one
    # deleted since (its inventories first) is skipped like them.
    names = await _names(reader.session, ResourceClass.id, ResourceClass.name)
    return Tables(positions, traits, inventories, names)


async def whole_tables(source: Source, scope: SummaryScope) -> Tables:
    """The rows of every provider (for summaries of most of them)."""
    positions = await fetch_all(source, _POSITIONS)
    traits = await fetch_all(source, _TRAITS) if scope.with_traits else ()
    statement = _inventories(dialect_of(source).name, scope.class_ids)
    inventories = await fetch_all(source, statement)
    names = await _names(source, ResourceClass.id, ResourceClass.name)
    return Tables(positions, traits, inventories, names)


def in_scope(positions: Sequence[Position], scope: SummaryScope) -> dict[int, Position]:
    wanted = 3 if scope.whole_trees else 0
    ids = scope.ids
    return {row[0]: row for row in positions if row[wanted] in ids}


# Which providers a probe reads: those whose root (or own) id is in the
# array ``ids``, or those of the first ``most`` trees, in root order, that
# hold a provider having one of the traits, or in one of the aggregates, in
# the array ``members_of``.
FilterKind = Literal["trait", "aggregate"]
ProbeBy = Literal["ids"] | FilterKind


def _first_trees(by: ProbeBy) -> ColumnElement[bool]:
    member = aliased(ResourceProvider)
    of = bindparam("members_of", type_=ARRAY(Integer))
    if by == "trait":
        link, condition = ProviderTrait.resource_provider_id, ProviderTrait.trait_id == any_(of)
    else:
        link = ProviderAggregate.resource_provider_id
        condition = ProviderAggregate.aggregate_id == any_(of)
    root = func.coalesce(member.root_provider_id, member.id)
    trees = (
        select(root)
        .join(link.class_, link == member.id)
        .where(condition)
        .distinct()
        .order_by(root)
        .limit(bindparam("most", type_=Integer))
    )
    return ResourceProvider.root_provider_id.in_(trees)


# Probe statements by their arguments, kept per engine (``EngineCaches``):
# building and compiling one costs more than running it for a few hundred providers.
def _probe_statements() -> LRUCache[tuple[object, ...], Select[*Probed]]:
    return LRUCache(64)


def probe_statement(
    source: Source,
    whole_trees: bool,
    class_ids: frozenset[int] | None,
    with_traits: bool,
    by: ProbeBy = "ids",
) -> Select[*Probed]:
    """Providers (see ``ProbeBy``), with their trait ids and inventories as arrays."""
    kept = caches_of(engine_of(source)).own(_probe_statements)
    key = (whole_trees, class_ids, with_traits, by)
    found = kept.get(key)
    if found is None:
        found = kept[key] = _build_probe(whole_trees, class_ids, with_traits, by)
    return found


def _build_probe(
    whole_trees: bool, class_ids: frozenset[int] | None, with_traits: bool, by: ProbeBy
) -> Select[*Probed]:
    # Each array is a subquery ordered by id over the table's provider index,
    # so no sort and no grouping.
    of_provider = Inventory.resource_provider_id == ResourceProvider.id
    if class_ids is not None:
        of_provider = of_provider & Inventory.resource_class_id.in_(sorted(class_ids))
    by_class = Inventory.resource_class_id
    trait_ids = (
        func.array(
            select(ProviderTrait.trait_id)
            .where(ProviderTrait.resource_provider_id == ResourceProvider.id)
            .order_by(ProviderTrait.trait_id)
            .scalar_subquery(),
            type_=ARRAY(Integer),
        )
        if with_traits
        else literal_column("'{}'::integer[]", ARRAY(Integer))
    )
    scoped_by = ResourceProvider.root_provider_id if whole_trees else ResourceProvider.id
    scope = (
        scoped_by == any_(bindparam("ids", type_=ARRAY(Integer)))
        if by == "ids"
        else _first_trees(by)
    )
    capacity = shown_capacity("postgresql")
    inventories = (
        select(array([Inventory.resource_class_id, Inventory.used, capacity]))
        .where(of_provider)
        .order_by(by_class)
        .scalar_subquery()
    )
    # The typing of ARRAY knows one dimension only.
    return cast(
        "Select[*Probed]",
        select(
            ResourceProvider.id,
            ResourceProvider.uuid,
            ResourceProvider.parent_provider_id,
            ResourceProvider.root_provider_id,
            trait_ids,
            func.array(inventories, type_=ARRAY(BigInteger, dimensions=2)),
        )
        .where(scope)
        .order_by(ResourceProvider.id),
    )


async def probe(source: Source, scope: SummaryScope) -> list[Row[*Probed]]:
    statement = probe_statement(source, scope.whole_trees, scope.class_ids, scope.with_traits)
    rows: list[Row[*Probed]] = []
    for batch in id_batches(source, scope.ids):
        rows += await fetch_all(source, statement, {"ids": batch})
    return rows
