"""Windows of the trees of a filter's members, page by page: a trait's
holders or an aggregate's members in provider id order, read from the
(trait or aggregate, provider) index, so that a page costs its size and a
filtered search follows the limit, not the cloud (docs/candidates.md)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates import lookups
from placement_api.domain.candidates.provider_filters import RootList, Window
from placement_api.domain.candidates.summary_rows import FilterKind


async def narrowest_pages(
    session: AsyncSession,
    trait_sets: list[frozenset[int]],
    aggregate_sets: list[frozenset[int]],
    up_to: int,
) -> MemberPages:
    """Pages of the members of the filter leaving the fewest, counted (up
    to ``up_to``) only when there is more than one filter to choose from."""
    filters: list[tuple[FilterKind, frozenset[int]]] = [
        *(("trait", ids) for ids in trait_sets),
        *(("aggregate", ids) for ids in aggregate_sets),
    ]
    narrowest = 0
    if len(filters) > 1:
        members = await lookups.member_counts(session, trait_sets, aggregate_sets, up_to=up_to)
        narrowest = members.index(min(members))
    kind, ids = filters[narrowest]
    return MemberPages(session, kind, ids)


class MemberPages:
    """Windows of the trees of a filter's members (a trait's holders, an
    aggregate's members), taken page by page in provider id order, each
    tree once: what a window costs follows its page, not the cloud."""

    # A LIMIT PostgreSQL takes (the rest at once is "as many as there are").
    LARGEST_PAGE = 2**31 - 1

    def __init__(
        self,
        session: AsyncSession,
        kind: FilterKind,
        ids: frozenset[int],
        first_page: Sequence[tuple[int, int, int]] = (),
    ) -> None:
        """``first_page``: the first (provider, root, trait or aggregate) of
        the members, by provider id, when they were read already (by the
        prelude): a first page no longer than them is taken from them."""
        self.session, self.kind, self.ids = session, kind, ids
        self._first_page = first_page
        # Every member up to this provider id has been read.
        self.after = 0
        # Which of the traits the members read since the last ``take_held`` have.
        self._held: dict[int, set[int]] = {}
        self._seen: set[int] = set()
        self._last = False

    def take_held(self) -> dict[int, set[int]]:
        held, self._held = self._held, {}
        return held

    async def __call__(self, done: int, size: int) -> Window | None:
        """The trees of the next ``size`` members (``done`` are behind: the
        pages keep their own place) not read yet; None past the last."""
        while not self._last:
            size = min(size, self.LARGEST_PAGE)
            first, self._first_page = self._first_page, ()
            page = (
                list(first[:size])
                if len(first) >= size
                else await lookups.member_page(self.session, self.kind, self.ids, self.after, size)
            )
            self._last = len(page) < size
            if page:
                self.after = page[-1][0]
            if self.kind == "trait":
                for provider, _, trait in page:
                    self._held.setdefault(provider, set()).add(trait)
            fresh = sorted({root for _, root, _ in page} - self._seen)
            if fresh:
                self._seen.update(fresh)
                return RootList(tuple(fresh))
        return None
