"""What the response says about each provider involved: capacity, usage, traits, tree.

Loaded in bulk, only for the providers the returned candidates involve:
their tree positions, traits and inventories (read by ``summary_rows``, or
read ahead by ``prefetch``), assembled here into ``ProviderSummary``s. Class
and trait names come from their small tables rather than a join on every
row; on PostgreSQL they are kept across requests (``_KnownNames``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

from sqlalchemy import Boolean, Integer, Row, any_, bindparam, literal, select, union_all
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.driver import Ts, fetch_all
from placement_api.db.engine_caches import caches_of
from placement_api.db.models import ResourceClass, Trait
from placement_api.domain.candidates.lookups import uuids_of
from placement_api.domain.candidates.prefetch import Prefetch
from placement_api.domain.candidates.summary_rows import (
    Probed,
    Reader,
    SummaryScope,
    Tables,
    in_scope,
    probe,
    probed,
    read_tables,
)

NO_TRAITS: tuple[str, ...] = ()


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


async def _from_tables(session: AsyncSession, tables: Tables, scope: SummaryScope) -> Summaries:
    positions = list(in_scope(tables.positions, scope).values())
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


def _known_names(session: AsyncSession) -> _KnownNames:
    return caches_of(session.get_bind().engine).own(_KnownNames)


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
        rows += await probe(session, replace(scope, ids=frozenset(missing)))
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
    if probed(session, len(scope.ids), estimated_providers):
        return await _probed_summaries(session, scope, prefetch)
    tables = await read_tables(Reader(session, estimated_providers), scope)
    return await _from_tables(session, tables, scope)
