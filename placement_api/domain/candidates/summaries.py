"""What the response says about each provider involved: capacity, usage, traits, tree.

Loaded in bulk, only for the providers the returned candidates involve:
their tree positions, traits and inventories. Class and trait names come
from their small tables rather than a join on every row.

On PostgreSQL a scope of a few of many providers is one statement that
probes by id and carries each provider's traits and inventories as arrays
(decoded by the driver, not row by row in Python). Other scopes, and all
on SQLite, are read part by part: from whole tables when they cover most
providers, else in batches by id. On PostgreSQL summaries may be read ahead,
on a second connection, while the search runs (``Prefetch``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection, Coroutine, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any, Literal, NamedTuple, cast
from weakref import WeakKeyDictionary

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Integer,
    Row,
    Select,
    any_,
    bindparam,
    func,
    literal,
    literal_column,
    select,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, array
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.orm import InstrumentedAttribute, aliased
from sqlalchemy.pool import QueuePool

from placement_api.db.models import (
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import (
    IdColumn,
    Source,
    Ts,
    dialect_of,
    fetch_all,
    id_batches,
    id_in,
)
from placement_api.domain.candidates.lookups import uuids_of
from placement_api.domain.capacity import shown_capacity

# When the summaries cover at least this share of all providers, PostgreSQL
# reads the tables whole: planning a probe by an array of thousands of ids
# costs more than reading (and skipping) the rows of the other providers.
WHOLE_TABLE_SHARE = 0.5
# On PostgreSQL, scopes of fewer ids (and not most providers) are read by one
# statement probing by id. Larger scopes are read part by part, where a
# per-provider probe for each part costs more than scans and batches.
PROBED_IN_ONE = 2000
NO_TRAITS: tuple[str, ...] = ()

Position = Row[int, str, int | None, int | None]
# Position, trait ids, [class id, used, capacity] per inventory.
Probed = tuple[int, str, int | None, int | None, Sequence[int], Sequence[Sequence[int]]]


@dataclass
class ProviderSummary:
    """A provider's summary, its fields named and ordered as the newest
    microversions show it, so the encoder writes it as it is (orjson writes
    a dataclass with a ``__dict__`` as fast as a dict, one with slots three
    times slower)."""

    # Class name -> {"capacity": ..., "used": ...}.
    resources: dict[str, dict[str, int]]
    traits: tuple[str, ...]
    parent_provider_uuid: str | None
    root_provider_uuid: str


class Summaries(NamedTuple):
    """Summaries by provider id, and the uuid of each of those providers."""

    uuids: dict[int, str]
    providers: dict[int, ProviderSummary]


@dataclass(frozen=True)
class SummaryScope:
    """Whole trees (by root id) or single providers (by id)."""

    ids: frozenset[int]
    whole_trees: bool
    class_ids: frozenset[int] | None = None
    with_traits: bool = True


def _covers_most(estimated_providers: float, count: int) -> bool:
    return 0 < estimated_providers <= count / WHOLE_TABLE_SHARE


def _probed(session: AsyncSession, count: int, estimated_providers: float) -> bool:
    """Whether summaries of ``count`` ids are read by one probing statement:
    on PostgreSQL, for a few of many providers."""
    return (
        session.get_bind().dialect.name == "postgresql"
        and count < PROBED_IN_ONE
        and not _covers_most(estimated_providers, count)
    )


class _Reader:
    """Reads rows of the providers in scope, probing by id or reading whole tables."""

    def __init__(self, session: AsyncSession, estimated_providers: float) -> None:
        self.session = session
        self.estimated_providers = estimated_providers

    def covers_most(self, count: int) -> bool:
        return _covers_most(self.estimated_providers, count)

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


class _Tables(NamedTuple):
    """Rows of the providers in a scope, and maybe of others (skipped when
    the summaries are built)."""

    # By id.
    positions: Sequence[Position]
    # (provider id, trait name), in trait id order.
    traits: Sequence[Row[int, str]]
    # (provider id, class id, capacity, used), in class id order per provider.
    inventories: Sequence[Row[int, int, int, int]]
    class_names: dict[int, str]


async def _read_tables(reader: _Reader, scope: SummaryScope) -> _Tables:
    """The rows of the providers in scope, by id or from whole tables."""
    column = ResourceProvider.root_provider_id if scope.whole_trees else ResourceProvider.id
    positions = await reader.rows(_POSITIONS, column, scope.ids)
    if not reader.covers_most(len(scope.ids)):
        # Batches of ids each come in id order, but not together.
        positions = sorted(positions, key=itemgetter(0))
    providers = _in_scope(positions, scope).keys()
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
    return _Tables(positions, traits, inventories, names)


async def _whole_tables(source: Source, shape: SummaryScope) -> _Tables:
    """The rows of every provider (for summaries of most of them)."""
    positions = await fetch_all(source, _POSITIONS)
    traits = await fetch_all(source, _TRAITS) if shape.with_traits else ()
    statement = _inventories(dialect_of(source).name, shape.class_ids)
    inventories = await fetch_all(source, statement)
    names = await _names(source, ResourceClass.id, ResourceClass.name)
    return _Tables(positions, traits, inventories, names)


def _in_scope(positions: Sequence[Position], scope: SummaryScope) -> dict[int, Position]:
    wanted = 3 if scope.whole_trees else 0
    ids = scope.ids
    return {row[0]: row for row in positions if row[wanted] in ids}


async def _from_tables(session: AsyncSession, tables: _Tables, scope: SummaryScope) -> Summaries:
    positions = list(_in_scope(tables.positions, scope).values())
    uuids = await _tree_uuids(session, positions)
    summaries = {
        ident: ProviderSummary(
            {}, NO_TRAITS, uuids[parent] if parent else None, uuids[root or ident]
        )
        for ident, _, parent, root in positions
    }
    grouped: dict[int, list[str]] = {}
    for provider, trait in tables.traits:
        if provider in summaries:
            grouped.setdefault(provider, []).append(trait)
    for provider, traits in grouped.items():
        summaries[provider].traits = tuple(traits)
    names = tables.class_names
    resources_of = {ident: summary.resources for ident, summary in summaries.items()}
    for provider, class_id, capacity, used in tables.inventories:
        resources = resources_of.get(provider)
        name = names.get(class_id)
        if resources is not None and name is not None:
            resources[name] = {"capacity": capacity, "used": used}
    return Summaries(uuids, summaries)


async def _tree_uuids(
    session: AsyncSession, positions: Sequence[Row[int, str, int | None, int | None, *Ts]]
) -> dict[int, str]:
    """Uuid of every provider in ``positions`` and of their parents and roots."""
    uuids = dict(map(itemgetter(0, 1), positions))
    # Single providers may have parents and roots outside the scope.
    related = chain(map(itemgetter(2), positions), map(itemgetter(3), positions))
    outside: set[int] = {i for i in related if i is not None} - uuids.keys()
    if outside:
        uuids.update(await uuids_of(session, outside))
    return uuids


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


@lru_cache(maxsize=64)
def _probe_statement(
    whole_trees: bool, class_ids: frozenset[int] | None, with_traits: bool, by: ProbeBy = "ids"
) -> Select[*Probed]:
    """Providers (see ``ProbeBy``), with their trait ids and inventories as arrays.

    Each array is a subquery ordered by id over the table's provider index,
    so no sort and no grouping. Built once per shape: building and compiling
    it costs more than running it for a few hundred providers.
    """
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


# The names of the classes and traits in the arrays ``class_ids`` and ``trait_ids``.
_NAMES = select(
    union_all(
        select(ResourceClass.id, ResourceClass.name, literal(False, Boolean)).where(
            ResourceClass.id == any_(bindparam("class_ids", type_=ARRAY(Integer)))
        ),
        select(Trait.id, Trait.name, literal(True, Boolean)).where(
            Trait.id == any_(bindparam("trait_ids", type_=ARRAY(Integer)))
        ),
    ).subquery()
)


class _KnownNames:
    """Class and trait names by id, kept across requests, per engine (on
    PostgreSQL only).

    A class or trait never changes its name, and PostgreSQL never hands out
    an id twice, so a name once read stays right; only ids not seen yet cost
    a round trip. Names of deleted ones linger unused (their inventories
    and provider traits went first).
    """

    def __init__(self) -> None:
        self.classes: dict[int, str] = {}
        self.traits: dict[int, str] = {}

    async def read(self, session: AsyncSession, class_ids: set[int], trait_ids: set[int]) -> None:
        """Read the names of the ids not known yet."""
        new_classes, new_traits = class_ids - self.classes.keys(), trait_ids - self.traits.keys()
        if new_classes or new_traits:
            parameters = {"class_ids": sorted(new_classes), "trait_ids": sorted(new_traits)}
            for ident, name, is_trait in await fetch_all(session, _NAMES, parameters):
                (self.traits if is_trait else self.classes)[ident] = name


_KNOWN_NAMES: WeakKeyDictionary[Engine, _KnownNames] = WeakKeyDictionary()


def _known_names(session: AsyncSession) -> _KnownNames:
    engine = session.get_bind().engine
    known = _KNOWN_NAMES.get(engine)
    if known is None:
        known = _KNOWN_NAMES[engine] = _KnownNames()
    return known


async def _probe(source: Source, scope: SummaryScope) -> list[Row[*Probed]]:
    statement = _probe_statement(scope.whole_trees, scope.class_ids, scope.with_traits)
    rows: list[Row[*Probed]] = []
    for batch in id_batches(source, scope.ids):
        rows += await fetch_all(source, statement, {"ids": batch})
    return rows


class Prefetch:
    """Summary rows read ahead, on a second connection, while the request's
    rows are read and its search runs (PostgreSQL only).

    Summaries cover the trees that candidates use, known once the search is
    done; the trees a search will try first are known before its rows are
    read. A connection runs one statement at a time, so a second one lets
    PostgreSQL read their summaries beside the request's own statements
    (on the machine's other core) and while Python searches. It reads
    outside any transaction: at READ COMMITTED each of the request's own
    statements sees a snapshot of its own as well.

    The connection is taken only while the pool can give it at once: a
    request waiting for a second connection while holding its first could
    deadlock a busy pool. Without it, summaries are read after the search.
    """

    def __init__(
        self, engine: AsyncEngine, shape: SummaryScope, estimated_providers: float
    ) -> None:
        self.engine = engine
        self.shape = shape
        self.estimated_providers = estimated_providers
        # Ids probed, and the rows found; or every provider's rows.
        self.covered: set[int] = set()
        self.rows: list[Row[*Probed]] = []
        self.tables: _Tables | None = None
        self._everything = False
        self._connection: AsyncConnection | None = None
        self._reading: asyncio.Future[None] | None = None

    @classmethod
    def of(
        cls, session: AsyncSession, shape: SummaryScope, estimated_providers: float
    ) -> Prefetch | None:
        """A prefetch for the session's engine; None where there is none."""
        engine = session.bind
        if not isinstance(engine, AsyncEngine) or engine.dialect.name != "postgresql":
            return None
        return cls(engine, shape, estimated_providers)

    def serves(self, scope: SummaryScope) -> bool:
        return self.shape == replace(scope, ids=self.shape.ids)

    async def start(self, ids: Collection[int] | None) -> None:
        """Start reading the summaries of ``ids`` (roots or providers, as the
        shape says) not read yet or, given None, of every provider; return
        at once. Nothing is read where ``load_summaries`` would read the
        same no slower, part by part."""
        if self._everything:
            return
        fresh = frozenset(ids or ()) - self.covered
        count = len(self.covered) + len(fresh)
        everything = ids is None or _covers_most(self.estimated_providers, count)
        if not everything and (not fresh or count >= PROBED_IN_ONE):
            return
        connection = await self._connect()
        if connection is None:
            return
        if everything:
            self._everything = True
            await self._launch(self._read_everything(connection))
        else:
            self.covered |= fresh
            await self._launch(self._probe(connection, replace(self.shape, ids=fresh)))

    async def start_first_trees(
        self, by: FilterKind, members_of: Collection[int], most: int
    ) -> None:
        """Start reading the summaries of the first ``most`` trees, in root
        order, holding a provider that has one of the traits (or is in one
        of the aggregates) ``members_of``; return at once. For whole trees."""
        assert self.shape.whole_trees
        connection = await self._connect()
        if connection is None:
            return
        statement = _probe_statement(True, self.shape.class_ids, self.shape.with_traits, by)
        parameters = {"members_of": sorted(members_of), "most": most}
        await self._launch(self._probe_first(connection, statement, parameters))

    async def _launch(self, read: Coroutine[Any, Any, None]) -> None:
        """Run ``read`` after the reads under way; return once it is sent."""
        self._reading = asyncio.ensure_future(_after(self._reading, read))
        # One turn of the loop sends it, whatever follows (a search never yields).
        await asyncio.sleep(0)

    async def _probe_first(
        self, connection: AsyncConnection, statement: Select[*Probed], parameters: dict[str, object]
    ) -> None:
        rows = await fetch_all(connection, statement, parameters)
        self.rows += rows
        self.covered.update(root for _, _, _, root, _, _ in rows if root is not None)

    async def _connect(self) -> AsyncConnection | None:
        if self._connection is None:
            pool = self.engine.sync_engine.pool
            # Fewer checked out than the pool's size: one is idle or can be
            # made, without waiting.
            if not isinstance(pool, QueuePool) or pool.checkedout() >= pool.size():
                return None
            connection = await self.engine.connect()
            self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        return self._connection

    async def _probe(self, connection: AsyncConnection, scope: SummaryScope) -> None:
        self.rows += await _probe(connection, scope)

    async def _read_everything(self, connection: AsyncConnection) -> None:
        self.tables = await _whole_tables(connection, self.shape)

    async def settle(self) -> None:
        """Wait for the reads under way."""
        if self._reading is not None:
            reading, self._reading = self._reading, None
            await reading

    async def close(self) -> None:
        """Give the connection back, once reads under way are done (their
        errors are the request's only if it settled them). A request
        cancelled meanwhile cancels the read it awaits, and resumes once
        that read has ended, so no statement runs on a returned connection."""
        try:
            with suppress(Exception):
                await self.settle()
        finally:
            if self._connection is not None:
                await self._connection.close()


async def _after(previous: Awaitable[None] | None, read: Coroutine[Any, Any, None]) -> None:
    if previous is not None:
        try:
            await previous
        except BaseException:
            read.close()  # never started
            raise
    await read


async def _probed_summaries(
    session: AsyncSession, scope: SummaryScope, prefetch: Prefetch | None
) -> Summaries:
    rows: list[Row[*Probed]] = []
    missing = scope.ids
    if prefetch is not None and prefetch.serves(scope):
        wanted = 3 if scope.whole_trees else 0
        rows = [row for row in prefetch.rows if row[wanted] in scope.ids]
        missing = scope.ids - prefetch.covered
    if missing:
        rows += await _probe(session, replace(scope, ids=frozenset(missing)))
    # Batches each come in id order, but not together.
    rows.sort(key=itemgetter(0))
    uuids = await _tree_uuids(session, rows)
    known = _known_names(session)
    summaries = _from_probed(rows, uuids, known)
    if summaries is None:
        # Names not known yet are read after the rows, so every class and
        # trait they name had been created; one deleted since is skipped.
        await known.read(
            session,
            {inventory[0] for row in rows for inventory in row[5]},
            {trait for row in rows for trait in row[4]},
        )
        summaries = _from_probed(rows, uuids, known, complete=True)
        assert summaries is not None
    return Summaries(uuids, summaries)


def _from_probed(
    rows: Sequence[Row[*Probed]], uuids: dict[int, str], known: _KnownNames, complete: bool = False
) -> dict[int, ProviderSummary] | None:
    """Summaries from probed rows; None when a class or trait has a name not
    known yet (unless the names are ``complete``: then it is skipped)."""
    class_names, trait_names = known.classes, known.traits
    # Providers share a few sets of traits.
    named_traits: dict[tuple[int, ...], tuple[str, ...]] = {(): NO_TRAITS}
    summaries: dict[int, ProviderSummary] = {}
    for ident, _, parent, root, trait_ids, inventories in rows:
        resources: dict[str, dict[str, int]] = {}
        for class_id, used, capacity in inventories:
            name = class_names.get(class_id)
            if name is not None:
                resources[name] = {"capacity": capacity, "used": used}
            elif not complete:
                return None
        key = tuple(trait_ids)
        traits = named_traits.get(key)
        if traits is None:
            if not complete and not trait_names.keys() >= set(key):
                return None
            traits = named_traits[key] = tuple(trait_names[t] for t in key if t in trait_names)
        summaries[ident] = ProviderSummary(
            resources, traits, uuids[parent] if parent else None, uuids[root or ident]
        )
    return summaries


async def load_summaries(
    session: AsyncSession,
    scope: SummaryScope,
    estimated_providers: float,
    prefetch: Prefetch | None = None,
) -> Summaries:
    """The summary of every provider in the scope, and the uuids of those
    providers (and of their parents and roots). ``estimated_providers`` is
    PostgreSQL's estimate of the provider count (0 where there is none)."""
    if prefetch is not None:
        await prefetch.settle()
        if prefetch.tables is not None and prefetch.serves(scope):
            return await _from_tables(session, prefetch.tables, scope)
    if _probed(session, len(scope.ids), estimated_providers):
        return await _probed_summaries(session, scope, prefetch)
    tables = await _read_tables(_Reader(session, estimated_providers), scope)
    return await _from_tables(session, tables, scope)
