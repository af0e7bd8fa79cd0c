"""Change indexes are taken in commit order: a write that commits later never
gets a lower index than one that is still committing, so a reader that has
seen index N has seen everything below N."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session
from sqlalchemy.util import await_

from placement_api.db.engine import create_engine
from placement_api.db.session import SessionFactory, make_session_factory, unit_of_work
from placement_api.domain import changes, providers


@pytest.fixture
async def factory(database_url: str) -> AsyncIterator[SessionFactory]:
    engine = create_engine(database_url)
    try:
        yield make_session_factory(engine)
    finally:
        await engine.dispose()


async def _create(factory: SessionFactory, name: str, *, hold: asyncio.Event | None = None) -> None:
    """Create a provider; with ``hold``, stop inside the commit, after the
    changes are appended and before the transaction ends, until it is set."""
    async with unit_of_work(factory, write=True) as session:
        await providers.create(session, name=name, uuid=None, parent_uuid=None)
        if hold is not None:
            # Instance listeners run after the class-level one that appends the changes.
            @event.listens_for(session.sync_session, "before_commit")
            def _stall(_session: Session) -> None:
                await_(hold.wait())


async def _read(factory: SessionFactory, since: int) -> changes.FeedPage:
    async with unit_of_work(factory, write=False) as session:
        return await changes.read(session, since, 100)


async def test_a_write_committing_after_another_gets_the_next_index(
    factory: SessionFactory,
) -> None:
    async with unit_of_work(factory, write=False) as session:
        start = await changes.last_index(session)
    release = asyncio.Event()
    first = asyncio.create_task(_create(factory, "first", hold=release))
    await asyncio.sleep(0.5)
    second = asyncio.create_task(_create(factory, "second"))
    await asyncio.sleep(1)
    # The second write waits for the first to commit, and readers see neither yet.
    assert not first.done()
    assert not second.done()
    assert await _read(factory, start) == changes.FeedPage(start, [])
    release.set()
    await asyncio.gather(first, second)
    page = await _read(factory, start)
    assert [(c["index"], c["name"]) for c in page.changes] == [
        (start + 1, "first"),
        (start + 2, "second"),
    ]
