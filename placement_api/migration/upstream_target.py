"""Writing a snapshot into an upstream-schema database (for ``db export``),
inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Table, insert, select, text

from placement_api.domain.standard_names import standard_resource_classes
from placement_api.migration import upstream_schema as up
from placement_api.migration.ours_target import KEPT_ID_TABLES, insert_batches, restart_sequences
from placement_api.migration.progress import Phases
from placement_api.migration.snapshot import Snapshot, parents_first


def write_upstream(connection: Connection, snapshot: Snapshot, phases: Phases) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    class_ids = _ensure_classes(connection, snapshot.resource_classes, now)
    trait_ids = _ensure_traits(connection, snapshot.traits, now)
    providers = [
        {
            "id": p.id,
            "uuid": p.uuid,
            "name": p.name,
            "generation": p.generation,
            "root_provider_id": p.root_id,
            "parent_provider_id": p.parent_id,
            "created_at": now,
        }
        for p in parents_first(snapshot.providers)
    ]
    _insert(connection, up.resource_providers, providers, phases, "providers")
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
            "created_at": now,
        }
        for inv in snapshot.inventories
    ]
    _insert(connection, up.inventories, inventories, phases, "inventories")
    _write_groupings(connection, snapshot, trait_ids, now, phases)
    _write_consumers(connection, snapshot, now, phases)
    consumer_uuids = {consumer.id: consumer.uuid for consumer in snapshot.consumers}
    allocations = [
        {
            "resource_provider_id": a.provider_id,
            "consumer_id": consumer_uuids[a.consumer_id],
            "resource_class_id": class_ids[a.resource_class],
            "used": a.used,
            "created_at": now,
        }
        for a in snapshot.allocations
    ]
    _insert(connection, up.allocations, allocations, phases, "allocations")
    if connection.dialect.name == "postgresql":
        restart_sequences(connection, KEPT_ID_TABLES)


def _insert(
    connection: Connection,
    target: Table,
    rows: Sequence[Mapping[str, Any]],
    phases: Phases,
    label: str,
) -> None:
    insert_batches(connection, target, rows, phases.start(label, len(rows)))


def _ensure_classes(connection: Connection, names: list[str], now: datetime) -> dict[str, int]:
    """Standard classes get upstream's id for them (their place in
    os-resource-classes), custom ones the next id from 10000 on."""
    table = up.resource_classes
    existing = dict(connection.execute(select(table.c.name, table.c.id)).tuples().all())
    standard = {name: index for index, name in enumerate(standard_resource_classes())}
    next_custom = max([up.FIRST_CUSTOM_CLASS_ID - 1, *existing.values()]) + 1
    rows = []
    for name in sorted(set(names) - set(existing)):
        if name in standard:
            existing[name] = standard[name]
        else:
            existing[name], next_custom = next_custom, next_custom + 1
        rows.append({"id": existing[name], "name": name, "created_at": now})
    if rows and connection.dialect.name in ("mysql", "mariadb"):
        # VCPU's id is 0, which MySQL would otherwise read as "the next id" (as upstream does).
        connection.execute(
            text("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
        )
    if rows:
        connection.execute(insert(table), rows)
    return existing


def _ensure_traits(connection: Connection, names: list[str], now: datetime) -> dict[str, int]:
    table = up.traits
    existing = set(connection.execute(select(table.c.name)).scalars())
    missing = sorted(set(names) - existing)
    if missing:
        connection.execute(insert(table), [{"name": name, "created_at": now} for name in missing])
    return dict(connection.execute(select(table.c.name, table.c.id)).tuples().all())


def _write_groupings(
    connection: Connection,
    snapshot: Snapshot,
    trait_ids: dict[str, int],
    now: datetime,
    phases: Phases,
) -> None:
    aggregates = [
        {"id": id_, "uuid": uuid, "created_at": now} for id_, uuid in snapshot.aggregates.items()
    ]
    _insert(connection, up.placement_aggregates, aggregates, phases, "aggregates")
    links = [
        {"resource_provider_id": provider_id, "aggregate_id": aggregate_id, "created_at": now}
        for provider_id, aggregate_id in snapshot.provider_aggregates
    ]
    _insert(connection, up.resource_provider_aggregates, links, phases, "provider aggregates")
    traits = [
        {"resource_provider_id": provider_id, "trait_id": trait_ids[name], "created_at": now}
        for provider_id, name in snapshot.provider_traits
    ]
    _insert(connection, up.resource_provider_traits, traits, phases, "provider traits")


def _write_consumers(
    connection: Connection, snapshot: Snapshot, now: datetime, phases: Phases
) -> None:
    for target, values in ((up.projects, snapshot.projects), (up.users, snapshot.users)):
        rows = [
            {"id": id_, "external_id": external, "created_at": now}
            for id_, external in values.items()
        ]
        _insert(connection, target, rows, phases, target.name)
    types = [
        {"id": id_, "name": name, "created_at": now}
        for id_, name in snapshot.consumer_types.items()
    ]
    _insert(connection, up.consumer_types, types, phases, "consumer types")
    consumers = [
        {
            "id": c.id,
            "uuid": c.uuid,
            "project_id": c.project_id,
            "user_id": c.user_id,
            "consumer_type_id": c.consumer_type_id,
            "generation": c.generation,
            "created_at": now,
        }
        for c in snapshot.consumers
    ]
    _insert(connection, up.consumers, consumers, phases, "consumers")
