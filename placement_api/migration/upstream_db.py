"""Connecting to an upstream database: a synchronous engine on a well-kept driver."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, inspect, make_url
from sqlalchemy.pool import NullPool

from placement_api.migration.problems import MigrationError

# The drivers a bare or async scheme stands for on this side.
SYNC_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgresql+asyncpg": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
}
UPSTREAM_TABLES = {"resource_providers", "allocations", "consumers", "alembic_version"}


def upstream_engine(url: str) -> Engine:
    parsed = make_url(url)
    driver = SYNC_DRIVERS.get(parsed.drivername, parsed.drivername)
    if not driver.startswith(("postgresql", "mysql", "mariadb")):
        raise MigrationError(
            f"{parsed.drivername}: an upstream database is PostgreSQL (postgresql://...) "
            "or MySQL/MariaDB (mysql+pymysql://...)"
        )
    return create_engine(parsed.set(drivername=driver), poolclass=NullPool)


def require_upstream_schema(engine: Engine) -> None:
    """Refuse a database that upstream's migrations did not create."""
    missing = UPSTREAM_TABLES - set(inspect(engine).get_table_names())
    if missing:
        raise MigrationError(
            f"not an upstream Placement database (no {', '.join(sorted(missing))}): "
            "create it with `placement-manage db sync`"
        )
