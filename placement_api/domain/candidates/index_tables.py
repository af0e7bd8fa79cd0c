"""The SQL behind the per-worker provider index (``provider_index``): the
change feed's entries since a position, and the rows of every provider or
of some, table by table."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    Row,
    Select,
    bindparam,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.driver import fetch_all
from placement_api.db.models import (
    Aggregate,
    Change,
    ChangeFeedHead,
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.capacity import LIMIT_COLUMNS
from placement_api.domain.changes import HEAD_ID

# (feed index or None, resource, action, uuid, details)
Entry = tuple[int | None, str, str, str, Any]


class FeedNews(NamedTuple):
    """The feed's head and the entries after a position (plus those not yet
    given an index), in one snapshot: every entry indexed up to the head is
    among them."""

    epoch: str
    last_index: int
    entries: Sequence[Entry]


def _news_statement() -> Select[Any]:
    after = bindparam("after", type_=BigInteger)
    columns = (Change.feed_index, Change.resource, Change.action, Change.uuid, Change.details)
    pending = union_all(
        select(*columns).where(Change.feed_index > after),
        select(*columns).where(Change.feed_index.is_(None)),
    ).subquery("pending")
    # One statement, so one snapshot: the head and every entry it counts.
    bounded = select(pending).limit(bindparam("most", type_=Integer)).subquery("bounded")
    return (
        select(ChangeFeedHead.epoch, ChangeFeedHead.last_index, *bounded.c)
        .select_from(ChangeFeedHead)
        .outerjoin(bounded, true())
        .where(ChangeFeedHead.id == HEAD_ID)
    )


# Built once: building it cost more than running it.
_NEWS = _news_statement()


# An ``after`` no entry is past: only the entries not given an index yet.
UNINDEXED_ONLY = 2**63 - 1


async def feed_news(session: AsyncSession, after: int, most: int) -> FeedNews | None:
    """The head and up to ``most`` entries after index ``after`` (and those
    not given an index yet); None without a head."""
    parameters = {"after": after, "most": most}
    rows: Sequence[Any] = await fetch_all(session, _NEWS, parameters)
    if not rows:
        return None
    epoch, last_index = rows[0][0], rows[0][1]
    entries = [row[2:] for row in rows if row[3] is not None]
    return FeedNews(epoch, last_index, entries)


class ProviderRows(NamedTuple):
    """Rows of providers, table by table."""

    # (id, uuid, root id, parent id)
    positions: Sequence[Row[int, str, int, int | None]]
    # (provider id, trait id)
    traits: Sequence[Row[int, int]]
    # (provider id, aggregate id)
    aggregates: Sequence[Row[int, int]]
    # (provider id, class id, total, reserved, min, max, step, ratio, used)
    inventories: Sequence[Row[int, int, int, int, int, int, int, float, int]]


class Extent(NamedTuple):
    providers: int
    first_id: int
    last_id: int


async def provider_extent(session: AsyncSession) -> Extent:
    """How many providers there are, and their lowest and highest ids."""
    statement = select(func.count(), func.min(ResourceProvider.id), func.max(ResourceProvider.id))
    (row,) = await fetch_all(session, statement)
    return Extent(int(row[0]), int(row[1] or 0), int(row[2] or 0))


def _positions() -> Select[int, str, int, int | None]:
    return select(
        ResourceProvider.id,
        ResourceProvider.uuid,
        func.coalesce(ResourceProvider.root_provider_id, ResourceProvider.id),
        ResourceProvider.parent_provider_id,
    )


async def provider_rows(
    session: AsyncSession,
    *,
    uuids: Collection[str] = (),
    roots: Collection[int] = (),
    ids_between: tuple[int, int] | None = None,
) -> ProviderRows:
    """The rows of the providers whose ids are ``ids_between`` (both
    included), or else of those with these uuids and of every provider in
    the trees of ``roots``."""
    positions = _positions()
    if ids_between is not None:
        first, last = ids_between
        positions = positions.where(ResourceProvider.id.between(first, last))
    else:
        positions = positions.where(
            or_(
                ResourceProvider.uuid.in_(sorted(uuids)),
                ResourceProvider.root_provider_id.in_(sorted(roots)),
            )
        )
    found = await fetch_all(session, positions)
    if not found:
        return ProviderRows(found, (), (), ())
    ids = sorted(row[0] for row in found)

    def of(column: Any) -> ColumnElement[bool]:
        if ids_between is not None:
            return cast(ColumnElement[bool], column.between(*ids_between))
        return cast(ColumnElement[bool], column.in_(ids))

    traits = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id, ProviderTrait.trait_id).where(
            of(ProviderTrait.resource_provider_id)
        ),
    )
    aggregates = await fetch_all(
        session,
        select(ProviderAggregate.resource_provider_id, ProviderAggregate.aggregate_id).where(
            of(ProviderAggregate.resource_provider_id)
        ),
    )
    inventories = await fetch_all(
        session,
        select(
            Inventory.resource_provider_id,
            Inventory.resource_class_id,
            *LIMIT_COLUMNS,
            Inventory.used,
        )
        .where(of(Inventory.resource_provider_id))
        .order_by(Inventory.resource_provider_id, Inventory.resource_class_id),
    )
    return ProviderRows(found, traits, aggregates, inventories)


class NameRows(NamedTuple):
    classes: Sequence[Row[int, str]]
    traits: Sequence[Row[int, str]]
    aggregates: Sequence[Row[int, str]]


async def name_rows(session: AsyncSession) -> NameRows:
    """Every class, trait and aggregate, by id (one statement)."""
    statement = union_all(
        select(literal(0), ResourceClass.id, ResourceClass.name),
        select(literal(1), Trait.id, Trait.name),
        select(literal(2), Aggregate.id, Aggregate.uuid),
    )
    kinds: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
    for kind, ident, name in await fetch_all(session, statement):
        kinds[kind].append((ident, name))
    return NameRows(*kinds)
