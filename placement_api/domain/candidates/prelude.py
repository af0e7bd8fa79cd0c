"""What a candidate search reads before any rows, in one round trip.

The ids of the names the request uses (resource classes, traits, aggregate
uuids, ``in_tree`` provider uuids); the range of root ids; the sharing
providers; the providers holding the unsuffixed group's required traits,
with their roots (on PostgreSQL at most ``holder_cap`` per trait, the
lowest ids: a trait most hosts have would cost the whole cloud, where a
limit needs only a few of them); and on PostgreSQL its estimate of the
provider count. Each row is tagged with what it tells.

The statement is built once per set of parts a request needs
and dialect; the names and uuids go as list parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    bindparam,
    column,
    func,
    literal,
    literal_column,
    null,
    select,
    table,
    true,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.sql.selectable import CompoundSelect
from sqlalchemy.util import LRUCache

from placement_api.db.driver import fetch_all, in_bound_list
from placement_api.db.engine_caches import caches_of
from placement_api.db.models import (
    Aggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from placement_api.domain.candidates.fetching import IdColumn
from placement_api.domain.candidates.names import KnownIds
from placement_api.domain.candidates.provider_filters import sharing_ids
from placement_api.domain.candidates.queries import root_of
from placement_api.domain.candidates.request import CandidateRequest

# Row kinds: a name and its id, or a fact about the providers.
_CLASS, _TRAIT, _AGGREGATE, _TREE = "class", "trait", "aggregate", "tree"
_ROOTS, _SHARING, _HOLDERS, _ESTIMATE = "roots", "sharing", "holders", "estimate"

# (kind, name or text, and up to two ids)
_Part = Select[str, str | None, int | None, int | None]
_Prelude = CompoundSelect[str, str | None, int | None, int | None]


@dataclass(frozen=True)
class TraitHolders:
    """Providers having any of some traits: which of them each has; and per
    trait, the roots of the trees where some provider has it. ``partial``:
    the traits whose holders were cut at the cap (only the lowest ids read)."""

    traits: dict[int, frozenset[int]] = field(default_factory=dict)
    trees: dict[int, frozenset[int]] = field(default_factory=dict)
    partial: frozenset[int] = frozenset()
    # Per trait whose holders were cut: those read, (provider, root) by provider id.
    first_read: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def complete(self, any_of: frozenset[int]) -> bool:
        return not any_of & self.partial

    def first_page(self, any_of: frozenset[int]) -> list[tuple[int, int, int]]:
        """The first (provider, root, trait) of the holders of ``any_of``, by
        provider id, as the prelude read them: the first page of
        ``MemberPages`` (empty unless it is one trait whose holders were cut)."""
        if len(any_of) != 1:
            return []
        (trait,) = any_of
        return [(provider, root, trait) for provider, root in self.first_read.get(trait, ())]

    def roots_having(self, any_of: frozenset[int]) -> frozenset[int]:
        """Roots of the trees where some provider has one of ``any_of``."""
        return frozenset().union(*(self.trees.get(trait, ()) for trait in any_of))


@dataclass
class Prelude:
    ids: KnownIds = field(default_factory=KnownIds)
    # The lowest and highest root ids ((0, -1) when there are no providers).
    roots: tuple[int, int] = (0, -1)
    sharing: frozenset[int] = frozenset()
    holders: TraitHolders = field(default_factory=TraitHolders)
    # PostgreSQL's estimate of the provider count (0: none, as on SQLite).
    estimated_providers: int = 0


def _no_id() -> ColumnElement[int | None]:
    # Typed, so that the union's columns agree on every backend.
    return null().cast(Integer)


def _no_name() -> ColumnElement[str | None]:
    return null().cast(String)


def _named(
    kind: str, key: InstrumentedAttribute[str], ident: IdColumn, parameter: str, dialect: str
) -> _Part:
    return select(literal(kind), key, ident, _no_id()).where(
        in_bound_list(key, parameter, dialect, String)
    )


def _build(parts_needed: tuple[bool, ...], dialect: str) -> _Prelude:
    classes, traits, aggregates, trees, holders = parts_needed
    root = ResourceProvider.root_provider_id
    parts: list[_Part] = [
        select(literal(_ROOTS), _no_name(), func.min(root), func.max(root)),
        select(literal(_SHARING), _no_name(), sharing_ids().subquery().c[0], _no_id()),
    ]
    if classes:
        parts.append(_named(_CLASS, ResourceClass.name, ResourceClass.id, "classes", dialect))
    if traits:
        parts.append(_named(_TRAIT, Trait.name, Trait.id, "traits", dialect))
    if aggregates:
        parts.append(_named(_AGGREGATE, Aggregate.uuid, Aggregate.id, "aggregates", dialect))
    if trees:
        parts.append(_named(_TREE, ResourceProvider.uuid, root, "trees", dialect))
    if dialect == "postgresql":
        # The planner's estimate of the provider count (what ANALYZE saw).
        statistics = table("pg_class", column("reltuples"), column("oid"))
        providers: ColumnElement[object] = literal_column(
            f"'{ResourceProvider.__tablename__}'::regclass"
        )
        parts.append(
            select(
                literal(_ESTIMATE),
                _no_name(),
                statistics.c.reltuples.cast(Integer),
                _no_id(),
            ).where(statistics.c.oid == providers)
        )
    if holders:
        parts.append(_holders_part(dialect))
    return union_all(*parts)


def _holders_part(dialect: str) -> _Part:
    """Per trait, its holders and their roots as one "provider,root ..."
    string (thousands of holders cost one row, not one each), and how many.
    On PostgreSQL only the ``holder_cap`` lowest ids, read in order from the
    (trait, provider) index; SQLite has no LATERAL and reads them all."""
    held = select(
        ProviderTrait.resource_provider_id.label("provider"),
        root_of(ProviderTrait.resource_provider_id).label("root"),
    ).where(ProviderTrait.trait_id == Trait.id)
    if dialect == "postgresql":
        capped = held.order_by(ProviderTrait.resource_provider_id).limit(
            bindparam("holder_cap", type_=Integer)
        )
        rows = capped.lateral("held")
        source = select(Trait.id.label("trait"), rows.c.provider, rows.c.root).join(rows, true())
    else:
        source = held.add_columns(Trait.id.label("trait"))
    found = source.where(in_bound_list(Trait.name, "holder_traits", dialect, String)).subquery()
    pairs = func.aggregate_strings(
        found.c.provider.cast(String) + "," + found.c.root.cast(String), " "
    )
    return select(literal(_HOLDERS), pairs, found.c.trait, func.count()).group_by(found.c.trait)


# Kept per engine (``EngineCaches``), by which lists the request gives.
def _statements() -> LRUCache[tuple[bool, ...], _Prelude]:
    return LRUCache(64)


def _statement(session: AsyncSession, parts_needed: tuple[bool, ...], dialect: str) -> _Prelude:
    kept = caches_of(session.get_bind().engine).own(_statements)
    found = kept.get(parts_needed)
    if found is None:
        found = kept[parts_needed] = _build(parts_needed, dialect)
    return found


def _holders(pairs_by_trait: dict[int, str], partial: frozenset[int]) -> TraitHolders:
    """Holders from each trait's "provider,root provider,root ..." string."""
    trees: dict[int, frozenset[int]] = {}
    holders_of: dict[int, list[int]] = {}
    first_read: dict[int, list[tuple[int, int]]] = {}
    for trait, pairs in pairs_by_trait.items():
        numbers = list(map(int, pairs.replace(" ", ",").split(",")))
        trees[trait] = frozenset(numbers[1::2])
        holders_of[trait] = numbers[0::2]
        if trait in partial:
            # Read in provider order; the aggregate does not promise to keep it.
            first_read[trait] = sorted(zip(numbers[0::2], numbers[1::2], strict=True))
    if len(holders_of) == 1:
        # The common case: one trait asked for, thousands of holders.
        ((trait, providers),) = holders_of.items()
        traits = dict.fromkeys(providers, frozenset((trait,)))
        return TraitHolders(traits, trees, partial, first_read)
    traits_of: dict[int, set[int]] = {}
    for trait, providers in holders_of.items():
        for provider in providers:
            traits_of.setdefault(provider, set()).add(trait)
    # Thousands of holders share a few sets.
    shared: dict[frozenset[int], frozenset[int]] = {}
    traits = {}
    for provider, held in traits_of.items():
        key = frozenset(held)
        traits[provider] = shared.setdefault(key, key)
    return TraitHolders(traits, trees, partial, first_read)


def _lists(request: CandidateRequest) -> dict[str, list[str]]:
    """The names and uuids each part looks up (an empty list: no such part)."""
    trait_names = set(request.root_required | request.root_forbidden)
    aggregates: set[str] = set()
    holder_traits: set[str] = set()
    for group in request.groups:
        trait_names |= group.required.names
        aggregates |= group.member_of.forbidden.union(*group.member_of.any_of)
        if not group.granular:
            holder_traits.update(*group.required.any_of)
    return {
        "classes": sorted(request.requested_classes),
        "traits": sorted(trait_names),
        "aggregates": sorted(aggregates),
        "trees": sorted({g.in_tree for g in request.groups if g.in_tree}),
        "holder_traits": sorted(holder_traits),
    }


# No cap: every holder (a cap beyond any provider count; one more fits in int4).
UNCAPPED = 2**31 - 2


async def read_prelude(
    session: AsyncSession, request: CandidateRequest, holder_cap: int | None = None
) -> Prelude:
    """``holder_cap``: read at most this many holders per trait (None: all)."""
    lists = _lists(request)
    dialect = session.get_bind().dialect.name
    parts_needed = tuple(bool(values) for values in lists.values())
    parameters: dict[str, object] = {name: values for name, values in lists.items() if values}
    cap = UNCAPPED if holder_cap is None else holder_cap
    if lists["holder_traits"] and dialect == "postgresql":
        parameters["holder_cap"] = cap + 1
    found = Prelude()
    ids = found.ids
    by_name = {
        _CLASS: ids.classes,
        _TRAIT: ids.traits,
        _AGGREGATE: ids.aggregates,
        _TREE: ids.trees,
    }
    sharing: set[int] = set()
    holders: dict[int, str] = {}
    partial: set[int] = set()
    for kind, name, first, second in await fetch_all(
        session, _statement(session, parts_needed, dialect), parameters
    ):
        if first is None:
            continue  # the root range of an empty table
        if kind == _HOLDERS:
            assert name is not None
            assert second is not None
            holders[first] = name
            if second > cap:
                partial.add(first)
        elif kind == _SHARING:
            sharing.add(first)
        elif kind == _ROOTS:
            assert second is not None
            found.roots = (first, second)
        elif kind == _ESTIMATE:
            found.estimated_providers = max(first, 0)
        else:
            assert name is not None
            by_name[kind][name] = first
    found.sharing = frozenset(sharing)
    found.holders = _holders(holders, frozenset(partial))
    return found
