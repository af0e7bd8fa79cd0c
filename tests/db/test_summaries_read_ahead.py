"""Summaries read ahead on the unit of work's second connection (PostgreSQL):
taken only when the pool can give it at once, given back with the unit of
work's own, and never a reason for a request holding a connection to wait
for another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import asyncpg
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.pool import QueuePool

from placement_api.db.engine import create_engine
from placement_api.db.models import Aggregate, ResourceProvider, Trait
from placement_api.db.session import UnitOfWork, unit_of_work
from placement_api.domain.candidates.prefetch import Prefetch
from placement_api.domain.candidates.summaries import load_summaries
from placement_api.domain.candidates.summary_rows import FilterKind, SummaryScope
from placement_api.domain.changes import recording_session_factory
from placement_api.settings import Settings
from tests.api.test_allocation_candidates import get_ok
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

SCOPE = SummaryScope(ids=frozenset(), whole_trees=True)
# Far more providers than these tests make: summaries are probed by id.
ESTIMATE = 1e9
POOL_SIZE = 2
REQUEST = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512&limit=3"


@pytest.fixture
def settings(database_url: str, backend: str) -> Settings:
    if backend != "postgresql":
        pytest.skip("summaries are read ahead on PostgreSQL only")
    return Settings(
        database_url=database_url, enforce_new_defaults=False, database_pool_size=POOL_SIZE
    )


@pytest.fixture
async def hosts(api: PlacementClient) -> TreeBuilder:
    tree = TreeBuilder(api)
    for index in range(6):
        await tree.provider(
            f"host{index}",
            inventory={"VCPU": 4, "MEMORY_MB": 2048},
            traits=["CUSTOM_ODD"] if index % 2 else [],
            aggregates=["even"] if index % 2 == 0 else [],
        )
    return tree


@pytest.fixture
async def engine(settings: Settings, hosts: TreeBuilder) -> AsyncIterator[AsyncEngine]:
    created = create_engine(settings.database_url, pool_size=POOL_SIZE)
    try:
        yield created
    finally:
        await created.dispose()


def _pool(engine: AsyncEngine) -> QueuePool:
    pool = engine.sync_engine.pool
    assert isinstance(pool, QueuePool)
    return pool


def _prefetch(unit: UnitOfWork) -> Prefetch:
    second = unit.second_connection()
    assert second is not None
    return Prefetch(second, SCOPE, ESTIMATE)


async def _every_root(session: AsyncSession) -> frozenset[int]:
    return frozenset((await session.scalars(select(ResourceProvider.id))).all())


async def test_summaries_read_ahead_on_a_second_connection_that_is_given_back(
    engine: AsyncEngine,
) -> None:
    pool = _pool(engine)
    unit = unit_of_work(recording_session_factory(engine), write=False)
    async with unit as session:
        roots = await _every_root(session)
        alone = await load_summaries(session, replace(SCOPE, ids=roots), ESTIMATE)
        prefetch = _prefetch(unit)
        await prefetch.start(roots)
        assert pool.checkedout() == 2
        try:
            ahead = await load_summaries(session, replace(SCOPE, ids=roots), ESTIMATE, prefetch)
        finally:
            await prefetch.close()
    assert pool.checkedout() == 0
    assert len(alone.providers) == 6
    assert ahead == alone


async def test_no_second_connection_is_taken_from_a_pool_in_full_use(
    engine: AsyncEngine,
) -> None:
    pool = _pool(engine)
    factory = recording_session_factory(engine)
    async with unit_of_work(factory, write=False) as other:
        await _every_root(other)
        unit = unit_of_work(factory, write=False)
        async with unit as session:
            roots = await _every_root(session)
            alone = await load_summaries(session, replace(SCOPE, ids=roots), ESTIMATE)
            assert pool.checkedout() == POOL_SIZE
            prefetch = _prefetch(unit)
            await prefetch.start(roots)
            assert pool.checkedout() == POOL_SIZE
            try:
                # Read after the search instead, on the request's own connection.
                scope = replace(SCOPE, ids=roots)
                assert await load_summaries(session, scope, ESTIMATE, prefetch) == alone
            finally:
                await prefetch.close()


def test_only_a_read_hands_out_a_second_connection(engine: AsyncEngine) -> None:
    """A write's statements run in a transaction a second connection would not see."""
    factory = recording_session_factory(engine)
    assert unit_of_work(factory, write=True).second_connection() is None
    assert unit_of_work(factory, write=False).second_connection() is not None


@pytest.mark.parametrize(("by", "held"), [("trait", [1, 3, 5]), ("aggregate", [0, 2, 4])])
async def test_the_first_trees_a_filter_leaves_are_read_ahead(
    engine: AsyncEngine, hosts: TreeBuilder, by: FilterKind, held: list[int]
) -> None:
    unit = unit_of_work(recording_session_factory(engine), write=False)
    async with unit as session:
        ids = dict(
            (await session.execute(select(ResourceProvider.uuid, ResourceProvider.id))).all()
        )
        roots = [ids[hosts.uuids[f"host{index}"]] for index in held]
        if by == "trait":
            members_of = await session.scalars(select(Trait.id).where(Trait.name == "CUSTOM_ODD"))
        else:
            members_of = await session.scalars(select(Aggregate.id))
        prefetch = _prefetch(unit)
        await prefetch.start_first_trees(by, members_of.all(), 2)
        scope = replace(SCOPE, ids=frozenset(roots))
        try:
            await prefetch.settle()
            # The first two trees are read ahead; the third is read after.
            assert prefetch.covered == set(roots[:2])
            ahead = await load_summaries(session, scope, ESTIMATE, prefetch)
        finally:
            await prefetch.close()
        assert ahead == await load_summaries(session, scope, ESTIMATE)
        assert len(ahead.providers) == 3


async def test_more_concurrent_requests_than_connections_all_answer(
    api: PlacementClient, hosts: TreeBuilder
) -> None:
    """Four connections at most (pool and overflow) for eight requests: were
    each to wait for a second connection while holding one, they would wait
    for the pool's timeout (30 s) and fail."""
    alone = await get_ok(api, REQUEST)
    answers = await asyncio.wait_for(
        asyncio.gather(*(get_ok(api, REQUEST) for _ in range(8))), timeout=20
    )
    assert all(answer == alone for answer in answers)
    assert len(alone["allocation_requests"]) == 3


async def test_a_cancelled_request_cancels_its_reads_before_the_connection_goes_back(
    engine: AsyncEngine, database_url: str
) -> None:
    """A read blocked behind a lock is under way when the request is
    cancelled: it is cancelled too, and the pool's connections stay usable."""
    pool = _pool(engine)
    factory = recording_session_factory(engine)
    async with unit_of_work(factory, write=False) as session:
        roots = await _every_root(session)
    admin = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        # The request has read nothing yet, so holds no lock to wait for.
        unit = unit_of_work(factory, write=False)
        async with unit:
            prefetch = _prefetch(unit)
            async with admin.transaction():
                await admin.execute("LOCK TABLE resource_providers IN ACCESS EXCLUSIVE MODE")
                await prefetch.start(roots)
                closing = asyncio.ensure_future(prefetch.close())
                await asyncio.sleep(0.2)
                assert not closing.done()
                closing.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await closing
        assert pool.checkedout() == 0
        async with unit_of_work(factory, write=False) as session:
            alone = await load_summaries(session, replace(SCOPE, ids=roots), ESTIMATE)
            assert len(alone.providers) == 6
    finally:
        await admin.close()
