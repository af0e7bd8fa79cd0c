"""Fixtures shared by the database tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from placement_api.db.engine import create_engine
from placement_api.db.session import SessionFactory
from placement_api.domain.changes import recording_session_factory


@pytest.fixture
async def factory(database_url: str) -> AsyncIterator[SessionFactory]:
    """A session factory on the test's database, its engine disposed after."""
    engine = create_engine(database_url)
    try:
        yield recording_session_factory(engine)
    finally:
        await engine.dispose()
