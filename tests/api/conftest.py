"""Fixtures of the API tests beyond the suite's own (``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.settings import Settings
from tests.support import databases
from tests.support.client import PlacementClient
from tests.support.index_answers import indexed_app


@pytest.fixture
async def indexed(
    settings: Settings, cleaner: AsyncEngine
) -> AsyncIterator[tuple[PlacementClient, ProviderIndex]]:
    """An admin client over an app with the provider index (as shipped), and its index."""
    async with indexed_app(settings) as found:
        yield found
    await databases.clean(cleaner)


@pytest.fixture
async def cleaned(cleaner: AsyncEngine) -> AsyncIterator[None]:
    """The database emptied after the test, however it ends (for tests
    that make their own apps)."""
    yield
    await databases.clean(cleaner)
