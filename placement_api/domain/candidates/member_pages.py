"""Windows of the trees of a filter's members, page by page: a trait's
holders or an aggregate's members in provider id order, read from the
(trait or aggregate, provider) index, so that a page costs its size and a
filtered search follows the limit, not the cloud (docs/candidates.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates import lookups
from placement_api.domain.candidates.provider_filters import RootList, Window
from placement_api.domain.candidates.summary_rows import FilterKind


def narrowest_pages(
    session: AsyncSession,
    trait_sets: list[frozenset[int]],
    aggregate_sets: list[frozenset[int]],
    members: tuple[int, ...],
) -> MemberPages:
    """Pages of the members of the filter leaving the fewest (``members``,
    counted in that order, up to a page)."""
    narrowest = members.index(min(members))
    if narrowest < len(trait_sets):
        return MemberPages(session, "trait", trait_sets[narrowest])
    return MemberPages(session, "aggregate", aggregate_sets[narrowest - len(trait_sets)])


class MemberPages:
    """Windows of the trees of a filter's members (a trait's holders, an
    aggregate's members), taken page by page in provider id order, each
    tree once: what a window costs follows its page, not the cloud."""

    # A LIMIT PostgreSQL takes (the rest at once is "as many as there are").
    LARGEST_PAGE = 2**31 - 1

    def __init__(self, session: AsyncSession, kind: FilterKind, ids: frozenset[int]) -> None:
        self.session, self.kind, self.ids = session, kind, ids
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
            page = await lookups.member_page(self.session, self.kind, self.ids, self.after, size)
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
