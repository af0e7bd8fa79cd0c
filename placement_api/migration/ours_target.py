"""Writing a snapshot into our database, inside the caller's transaction.

Ids of providers, consumers, projects, users, aggregates and consumer types
are kept; resource classes and traits take our ids, found by name.
``inventories.used`` is computed here from the allocations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table, insert, select, text
from sqlalchemy.util import await_

from placement_api.db import models
from placement_api.domain import feed_index
from placement_api.domain.standard_names import standard_resource_classes, standard_traits
from placement_api.migration.bulk_load import foreign_keys_checked_after
from placement_api.migration.progress import Advance, Phases
from placement_api.migration.snapshot import Snapshot, parents_first

BATCH = 10_000
BULK_TABLES = [
    "resource_providers",
    "inventories",
    "resource_provider_aggregates",
    "resource_provider_traits",
    "consumers",
    "allocations",
]
KEPT_ID_TABLES = [
    "resource_providers",
    "placement_aggregates",
    "projects",
    "users",
    "consumer_types",
    "consumers",
]


def table(model: type[models.Base]) -> Table:
    return model.__table__  # type: ignore[return-value]


def write_ours(connection: Connection, snapshot: Snapshot, phases: Phases) -> None:
    class_ids = _ensure_names(
        connection,
        table(models.ResourceClass),
        snapshot.resource_classes + standard_resource_classes(),
    )
    trait_ids = _ensure_names(connection, table(models.Trait), snapshot.traits + standard_traits())
    with foreign_keys_checked_after(connection, BULK_TABLES):
        _write_providers(connection, snapshot, class_ids, trait_ids, phases)
        _write_consumers(connection, snapshot, phases)
        _write_usage(connection, snapshot, class_ids, phases)
    if connection.dialect.name == "postgresql":
        restart_sequences(connection, KEPT_ID_TABLES)
    # The rows came without change-feed entries.
    connection.execute(feed_index.NEW_EPOCH, feed_index.new_epoch("import"))


def _write_usage(
    connection: Connection, snapshot: Snapshot, class_ids: dict[str, int], phases: Phases
) -> None:
    """Inventories, with ``used`` summed from the allocations, then the allocations."""
    used: Counter[tuple[int, int]] = Counter()
    rows = []
    for allocation in snapshot.allocations:
        class_id = class_ids[allocation.resource_class]
        used[allocation.provider_id, class_id] += allocation.used
        rows.append(
            {
                "resource_provider_id": allocation.provider_id,
                "consumer_id": allocation.consumer_id,
                "resource_class_id": class_id,
                "used": allocation.used,
            }
        )
    inventories = [
        {
            "resource_provider_id": inv.provider_id,
            "resource_class_id": class_ids[inv.resource_class],
            "total": inv.total,
            "reserved": inv.reserved,
            "min_unit": inv.min_unit,
            "max_unit": inv.max_unit,
            "step_size": inv.step_size,
            "allocation_ratio": inv.allocation_ratio,
            "used": used[inv.provider_id, class_ids[inv.resource_class]],
        }
        for inv in snapshot.inventories
    ]
    insert_batches(
        connection,
        table(models.Inventory),
        inventories,
        phases.start("inventories", len(inventories)),
    )
    insert_batches(
        connection, table(models.Allocation), rows, phases.start("allocations", len(rows))
    )


def insert_batches(
    connection: Connection, target: Table, rows: Sequence[Mapping[str, Any]], advance: Advance
) -> None:
    """INSERT the rows a batch at a time; on asyncpg, COPY them (several times faster)."""
    copy = _asyncpg_copy(connection, target, list(rows[0])) if rows else None
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        if copy is not None:
            copy(batch)
        else:
            connection.execute(insert(target), batch)
        advance(len(batch))


def _asyncpg_copy(
    connection: Connection, target: Table, columns: list[str]
) -> Callable[[Sequence[Mapping[str, Any]]], None] | None:
    if connection.dialect.driver != "asyncpg":
        return None
    # The driver's own connection, inside the transaction SQLAlchemy began on it.
    driver = connection.connection.driver_connection
    assert driver is not None

    def copy(batch: Sequence[Mapping[str, Any]]) -> None:
        records = [tuple(row[column] for column in columns) for row in batch]
        await_(driver.copy_records_to_table(target.name, records=records, columns=columns))

    return copy


def restart_sequences(connection: Connection, tables: list[str]) -> None:
    """Rows written with their ids leave PostgreSQL's sequences behind them."""
    for name in tables:
        connection.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                f"COALESCE((SELECT MAX(id) FROM {name}), 0) + 1, false)"
            )
        )


def _ensure_names(connection: Connection, target: Table, names: list[str]) -> dict[str, int]:
    """Insert the names not there yet; return every name's id."""
    existing = dict(connection.execute(select(target.c.name, target.c.id)).tuples().all())
    missing = sorted(set(names) - set(existing))
    if missing:
        connection.execute(insert(target), [{"name": name} for name in missing])
        existing = dict(connection.execute(select(target.c.name, target.c.id)).tuples().all())
    return existing


def _write_providers(
    connection: Connection,
    snapshot: Snapshot,
    class_ids: dict[str, int],
    trait_ids: dict[str, int],
    phases: Phases,
) -> None:
    providers = [
        {
            "id": p.id,
            "uuid": p.uuid,
            "name": p.name,
            "generation": p.generation,
            "root_provider_id": p.root_id,
            "parent_provider_id": p.parent_id,
        }
        for p in parents_first(snapshot.providers)
    ]
    insert_batches(
        connection,
        table(models.ResourceProvider),
        providers,
        phases.start("providers", len(providers)),
    )
    aggregates = [{"id": id_, "uuid": uuid} for id_, uuid in snapshot.aggregates.items()]
    insert_batches(
        connection, table(models.Aggregate), aggregates, phases.start("aggregates", len(aggregates))
    )
    links = [
        {"resource_provider_id": provider_id, "aggregate_id": aggregate_id}
        for provider_id, aggregate_id in snapshot.provider_aggregates
    ]
    insert_batches(
        connection,
        table(models.ProviderAggregate),
        links,
        phases.start("provider aggregates", len(links)),
    )
    traits = [
        {"resource_provider_id": provider_id, "trait_id": trait_ids[name]}
        for provider_id, name in snapshot.provider_traits
    ]
    insert_batches(
        connection,
        table(models.ProviderTrait),
        traits,
        phases.start("provider traits", len(traits)),
    )


def _write_consumers(connection: Connection, snapshot: Snapshot, phases: Phases) -> None:
    for model, values in (
        (models.Project, snapshot.projects),
        (models.User, snapshot.users),
    ):
        rows = [{"id": id_, "external_id": external} for id_, external in values.items()]
        insert_batches(connection, table(model), rows, lambda _rows: None)
    types = [{"id": id_, "name": name} for id_, name in snapshot.consumer_types.items()]
    insert_batches(connection, table(models.ConsumerType), types, lambda _rows: None)
    consumers = [
        {
            "id": c.id,
            "uuid": c.uuid,
            "project_id": c.project_id,
            "user_id": c.user_id,
            "consumer_type_id": c.consumer_type_id,
            "generation": c.generation,
        }
        for c in snapshot.consumers
    ]
    insert_batches(
        connection, table(models.Consumer), consumers, phases.start("consumers", len(consumers))
    )
