"""The Alembic migrations are the only source of the schema: they must match the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from placement_api.db import migrations
from placement_api.db.engine import create_engine
from placement_api.db.models import Base


async def test_upgraded_schema_matches_models(database_url: str) -> None:
    engine = create_engine(database_url)

    def differences(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    try:
        async with engine.connect() as connection:
            diff = await connection.run_sync(differences)
    finally:
        await engine.dispose()
    assert diff == []


async def test_database_reports_itself_current(database_url: str) -> None:
    assert await migrations.current_revision(database_url) == migrations.head_revision(database_url)
