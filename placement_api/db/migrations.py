"""Schema migrations through Alembic, callable from the CLI and the tests."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from placement_api.db.engine import create_engine

# The migration scripts ship inside the package, so an installed wheel can
# upgrade a database from any working directory.
SCRIPT_LOCATION = Path(__file__).resolve().parent / "schema"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply migrations. Runs Alembic's own event loop, so call it from sync code."""
    command.upgrade(alembic_config(database_url), revision)


def head_revision(database_url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()


async def current_revision(database_url: str) -> str | None:
    engine = create_engine(database_url)

    def _read(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_read)
    finally:
        await engine.dispose()


def is_up_to_date(database_url: str) -> bool:
    return asyncio.run(current_revision(database_url)) == head_revision(database_url)
