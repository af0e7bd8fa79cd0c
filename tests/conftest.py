"""Fixtures shared by every test directory.

``database_url`` is parametrised over the backends in
``PLACEMENT_TEST_BACKENDS`` (default: sqlite and postgresql), so a test
that uses it — directly or through ``api`` — runs once per backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from functools import partial

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.db.engine import create_engine
from placement_api.settings import Settings
from tests.support import databases
from tests.support.client import AppClients, PlacementClient, app_client

# One real Keystone per test process, for every directory that asks for it.
from tests.support.keystone import keystone  # noqa: F401


@pytest.fixture(scope="session", params=databases.BACKENDS)
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with databases.migrated_database(request.param) as url:
        yield url


@pytest.fixture
def backend(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, enforce_new_defaults=False)


@pytest.fixture(scope="session")
async def cleaner(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The engine that empties a backend's database after each test: one for the
    session, as an engine per test cost its first connection every time."""
    engine = create_engine(database_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def apps(settings: Settings, cleaner: AsyncEngine) -> AsyncIterator[AppClients]:
    """Admin clients over apps made with these settings, changed as asked
    (``apps(changes_max_wait=2)``); the database is emptied after the test."""
    yield partial(app_client, settings)
    await databases.clean(cleaner)


@pytest.fixture
async def api(apps: AppClients) -> AsyncIterator[PlacementClient]:
    """An admin client at the latest microversion, over the ASGI app on a clean database."""
    async with apps() as client:
        yield client
