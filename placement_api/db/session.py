"""The unit of work: one request, one transaction.

``unit_of_work`` commits when the request's handler returns and rolls back
when it raises, so domain functions never commit. Write requests open their
transaction in write mode (``BEGIN IMMEDIATE`` on SQLite).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from placement_api.db.engine import WRITE_OPTION

SessionFactory = async_sessionmaker[AsyncSession]


def make_session_factory(engine: AsyncEngine) -> SessionFactory:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


@asynccontextmanager
async def unit_of_work(factory: SessionFactory, *, write: bool) -> AsyncIterator[AsyncSession]:
    async with factory() as session:
        await session.connection(execution_options={WRITE_OPTION: write})
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        await session.commit()
