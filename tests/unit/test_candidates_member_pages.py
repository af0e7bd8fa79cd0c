"""What the pages of a filter's members take without reading: a first page
the prelude read already, and the one filter there is to page through
(no count to choose it). The session is None: a read would fail."""

from __future__ import annotations

from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.domain.candidates.member_pages import MemberPages, narrowest_pages
from placement_api.domain.candidates.provider_filters import RootList

NO_SESSION = cast(AsyncSession, None)


async def test_a_first_page_read_by_the_prelude_is_taken_as_it_is() -> None:
    # (provider, root, trait): providers 1 and 2 in one tree, 4 in another.
    read = [(1, 1, 7), (2, 1, 7), (4, 4, 7), (6, 6, 7)]
    pages = MemberPages(NO_SESSION, "trait", frozenset({7}), read)
    assert await pages(0, 3) == RootList((1, 4))
    # The next page starts after the last member of this one.
    assert pages.after == 4
    assert pages.take_held() == {1: {7}, 2: {7}, 4: {7}}


async def test_one_filter_is_paged_through_without_counting_its_members() -> None:
    pages = await narrowest_pages(NO_SESSION, [], [frozenset({3})], up_to=1250)
    assert (pages.kind, pages.ids) == ("aggregate", frozenset({3}))
