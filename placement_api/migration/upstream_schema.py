"""Upstream Placement's tables (its models at the latest upstream migration),
as far as a move reads or writes them. Upstream's migrations create them."""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Float, Integer, MetaData, String, Table

METADATA = MetaData()

# Upstream numbers standard classes by their place in os-resource-classes
# and custom ones from here on.
FIRST_CUSTOM_CLASS_ID = 10000


def _timestamps() -> tuple[Column[object], Column[object]]:
    return Column("created_at", DateTime), Column("updated_at", DateTime)


def _named(name: str) -> Table:
    return Table(
        name,
        METADATA,
        Column("id", Integer, primary_key=True),
        Column("name", String(255), nullable=False),
        *_timestamps(),
    )


def _external(name: str) -> Table:
    return Table(
        name,
        METADATA,
        Column("id", Integer, primary_key=True),
        Column("external_id", String(255), nullable=False),
        *_timestamps(),
    )


resource_classes = _named("resource_classes")
traits = _named("traits")
consumer_types = _named("consumer_types")
projects = _external("projects")
users = _external("users")

resource_providers = Table(
    "resource_providers",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("uuid", String(36), nullable=False),
    Column("name", String(200)),
    Column("generation", Integer),
    Column("root_provider_id", Integer),
    Column("parent_provider_id", Integer),
    *_timestamps(),
)

inventories = Table(
    "inventories",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("resource_provider_id", Integer, nullable=False),
    Column("resource_class_id", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("reserved", Integer, nullable=False),
    Column("min_unit", Integer, nullable=False),
    Column("max_unit", Integer, nullable=False),
    Column("step_size", Integer, nullable=False),
    Column("allocation_ratio", Float, nullable=False),
    *_timestamps(),
)

allocations = Table(
    "allocations",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("resource_provider_id", Integer, nullable=False),
    Column("consumer_id", String(36), nullable=False),
    Column("resource_class_id", Integer, nullable=False),
    Column("used", Integer, nullable=False),
    *_timestamps(),
)

placement_aggregates = Table(
    "placement_aggregates",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("uuid", String(36)),
    *_timestamps(),
)

resource_provider_aggregates = Table(
    "resource_provider_aggregates",
    METADATA,
    Column("resource_provider_id", Integer, primary_key=True),
    Column("aggregate_id", Integer, primary_key=True),
    *_timestamps(),
)

resource_provider_traits = Table(
    "resource_provider_traits",
    METADATA,
    Column("trait_id", Integer, primary_key=True),
    Column("resource_provider_id", Integer, primary_key=True),
    *_timestamps(),
)

consumers = Table(
    "consumers",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("uuid", String(36), nullable=False),
    Column("project_id", Integer, nullable=False),
    Column("user_id", Integer, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("consumer_type_id", Integer),
    *_timestamps(),
)
