"""Change indexes follow commits: a write that had to wait for another's
locks orders after it, a write still in flight never holds back (or is
skipped by) writes that do not touch what it touches, and a reader that has
seen index N has seen everything below N."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session
from sqlalchemy.util import await_

from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import feed_index, providers


def _stall_commit(session: Session, hold: asyncio.Event) -> None:
    """Stop inside the commit, after the changes are appended and before the
    transaction ends (with every lock still held), until ``hold`` is set."""

    # Instance listeners run after the class-level one that appends the changes.
    @event.listens_for(session, "before_commit")
    def _stall(_session: Session) -> None:
        await_(hold.wait())


async def _create(factory: SessionFactory, name: str, *, hold: asyncio.Event | None = None) -> str:
    async with unit_of_work(factory, write=True) as session:
        made = await providers.create(session, name=name, uuid=None, parent_uuid=None)
        if hold is not None:
            _stall_commit(session.sync_session, hold)
    return made.uuid


async def _rename(
    factory: SessionFactory, uuid: str, name: str, *, hold: asyncio.Event | None = None
) -> None:
    async with unit_of_work(factory, write=True) as session:
        await providers.update_provider(
            session, uuid, name=name, parent_uuid=None, parent_given=False, may_reparent=False
        )
        if hold is not None:
            _stall_commit(session.sync_session, hold)


async def _head(factory: SessionFactory) -> int:
    """The feed's head after a sequencing run (a write on PostgreSQL only)."""
    on_postgresql = factory.kw["bind"].dialect.name == "postgresql"
    async with unit_of_work(factory, write=on_postgresql) as session:
        return (await feed_index.sequence(session)).index


async def _read(factory: SessionFactory, since: int) -> feed_index.FeedPage:
    await _head(factory)
    async with unit_of_work(factory, write=False) as session:
        return await feed_index.read(session, since, 100)


async def test_a_write_that_waited_for_another_orders_after_it(factory: SessionFactory) -> None:
    uuid = await _create(factory, "first name")
    start = await _head(factory)
    release = asyncio.Event()
    first = asyncio.create_task(_rename(factory, uuid, "second name", hold=release))
    await asyncio.sleep(0.5)
    second = asyncio.create_task(_rename(factory, uuid, "third name"))
    await asyncio.sleep(1)
    # The second write waits for the first's row lock, and readers see neither yet.
    assert not first.done()
    assert not second.done()
    unchanged = await _read(factory, start)
    assert (unchanged.index, unchanged.changes) == (start, [])
    release.set()
    await asyncio.gather(first, second)
    page = await _read(factory, start)
    assert [(c["index"], c["name"]) for c in page.changes] == [
        (start + 1, "second name"),
        (start + 2, "third name"),
    ]


async def test_a_write_in_flight_neither_blocks_nor_is_skipped(
    factory: SessionFactory, backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: nothing commits beside a write in flight")
    start = await _head(factory)
    release = asyncio.Event()
    slow = asyncio.create_task(_create(factory, "slow", hold=release))
    await asyncio.sleep(0.5)
    # Another provider's write commits (and is readable) while the first is still in flight.
    await asyncio.wait_for(_create(factory, "quick"), 10)
    page = await _read(factory, start)
    assert [(c["index"], c["name"]) for c in page.changes] == [(start + 1, "quick")]
    release.set()
    await slow
    page = await _read(factory, start + 1)
    assert [(c["index"], c["name"]) for c in page.changes] == [(start + 2, "slow")]
