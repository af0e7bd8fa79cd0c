"""What a windowed search knows of the providers' filters: which of the
unsuffixed group's required traits each provider read so far has (the
prelude's holders, completed window by window for the traits it cut at its
cap), and the filters of the groups no sharing provider can serve alone
(docs/candidates.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates import lookups
from placement_api.domain.candidates.member_pages import MemberPages
from placement_api.domain.candidates.names import ResolvedGroup
from placement_api.domain.candidates.planning import Rows
from placement_api.domain.candidates.prelude import TraitHolders


class TraitCompletion:
    """Which of the unsuffixed group's required traits each provider read so
    far has, completed for the traits whose holders the prelude cut at its cap."""

    def __init__(self, session: AsyncSession, holders: TraitHolders) -> None:
        self.session = session
        self._holders = holders
        self.provider_traits = dict(holders.traits)
        # The providers whose traits of those are known (when some were cut).
        self._traits_known: set[int] = set()

    async def complete_traits(self, providers: Iterable[int], pages: MemberPages | None) -> None:
        """Which of the traits the prelude cut at its cap ``providers`` have,
        in ``provider_traits`` before a search reads them there (``pages``:
        those the windows are drawn from, if any)."""
        partial = self._holders.partial
        unknown = set(providers) - self._traits_known
        self._traits_known |= unknown
        # One trait's pages list each holder once: every holder up to their
        # place has been read, so a provider there not among them lacks it.
        if (
            pages is not None
            and pages.kind == "trait"
            and len(partial) == 1
            and partial == pages.ids
        ):
            self._add_traits(pages.take_held())
            unknown = {provider for provider in unknown if provider > pages.after}
        if unknown:
            self._add_traits(await lookups.traits_of(self.session, partial, unknown))

    def _add_traits(self, found: dict[int, set[int]]) -> None:
        for provider, traits in found.items():
            self.provider_traits[provider] = self.provider_traits.get(provider, frozenset()).union(
                traits
            )


async def native_filter_sets(
    groups: Iterable[ResolvedGroup],
    all_sharing: frozenset[int],
    sharing_rows: Callable[[ResolvedGroup], Awaitable[Rows]],
) -> tuple[list[frozenset[int]], list[frozenset[int]]]:
    """The trait and aggregate sets (as ``Finder._filter_sets``) of the groups
    no sharing provider can serve alone: a suffixed group no sharing
    provider meets, the unsuffixed group when they lack one of its
    classes. Every candidate's tree holds a member of each.
    ``sharing_rows``: a group's rows of the sharing providers."""
    trait_sets: list[frozenset[int]] = []
    aggregate_sets: list[frozenset[int]] = []
    for group in groups:
        if not (group.member_of or (group.granular and group.required)):
            continue
        if all_sharing:
            shared = await sharing_rows(group)
            if group.granular and shared:
                continue
            offered = {row[2] for row in cast(list[tuple[int, int, int]], shared)}
            if not group.granular and group.amounts.keys() <= offered:
                continue
        if group.granular:
            trait_sets += group.required
        aggregate_sets += group.member_of
    return trait_sets, aggregate_sets
