"""A large upstream Placement database, written by SQL straight into
upstream's schema (made by its migrations): compute nodes with a NUMA child
each, shared aggregates and traits, consumers of two types, and three
allocations (VCPU, MEMORY_MB, DISK_GB) per consumer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import os_resource_classes
import os_traits
from sqlalchemy import Connection, Table, insert, text

from placement_api.migration import upstream_schema as up

BATCH = 10_000
ROOT_INVENTORY = {"VCPU": 64, "MEMORY_MB": 262_144, "DISK_GB": 4_000}
CHILD_INVENTORY = {"SRIOV_NET_VF": 64}
CONSUMER_ALLOCATION = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}


def _batches(rows: Sequence[dict[str, Any]]) -> Iterator[Sequence[dict[str, Any]]]:
    for start in range(0, len(rows), BATCH):
        yield rows[start : start + BATCH]


def _insert(connection: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    for batch in _batches(rows):
        connection.execute(insert(table), batch)


def generate(connection: Connection, *, providers: int, allocations: int) -> dict[str, int]:
    """Fill an empty upstream database; returns the rows written per table."""
    now = datetime.now(UTC).replace(tzinfo=None)
    if connection.dialect.name in ("mysql", "mariadb"):
        connection.execute(
            text("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
        )
    classes = {name: index for index, name in enumerate(os_resource_classes.STANDARDS)}
    _insert(
        connection,
        up.resource_classes,
        [{"id": i, "name": n, "created_at": now} for n, i in classes.items()],
    )
    trait_names = os_traits.get_traits()
    _insert(
        connection,
        up.traits,
        [{"id": i + 1, "name": n, "created_at": now} for i, n in enumerate(trait_names)],
    )
    roots = providers // 2
    provider_rows = []
    for index in range(roots):
        root_id, child_id = 2 * index + 1, 2 * index + 2
        provider_rows.append(
            {
                "id": root_id,
                "uuid": str(uuid.uuid4()),
                "name": f"cn{index}",
                "generation": 3,
                "root_provider_id": root_id,
                "parent_provider_id": None,
                "created_at": now,
            }
        )
        provider_rows.append(
            {
                "id": child_id,
                "uuid": str(uuid.uuid4()),
                "name": f"cn{index}_numa0",
                "generation": 1,
                "root_provider_id": root_id,
                "parent_provider_id": root_id,
                "created_at": now,
            }
        )
    _insert(connection, up.resource_providers, provider_rows)
    inventory_rows = [
        {
            "resource_provider_id": row["id"],
            "resource_class_id": classes[name],
            "total": total,
            "reserved": 0,
            "min_unit": 1,
            "max_unit": total,
            "step_size": 1,
            "allocation_ratio": 1.0,
            "created_at": now,
        }
        for row in provider_rows
        for name, total in (
            ROOT_INVENTORY if row["parent_provider_id"] is None else CHILD_INVENTORY
        ).items()
    ]
    _insert(connection, up.inventories, inventory_rows)
    aggregates = [{"id": i + 1, "uuid": str(uuid.uuid4()), "created_at": now} for i in range(50)]
    _insert(connection, up.placement_aggregates, aggregates)
    _insert(
        connection,
        up.resource_provider_aggregates,
        [
            {"resource_provider_id": 2 * i + 1, "aggregate_id": i % 50 + 1, "created_at": now}
            for i in range(roots)
        ],
    )
    avx2 = trait_names.index("HW_CPU_X86_AVX2") + 1
    _insert(
        connection,
        up.resource_provider_traits,
        [
            {"resource_provider_id": 2 * i + 1, "trait_id": avx2, "created_at": now}
            for i in range(roots)
        ],
    )
    _insert(
        connection,
        up.projects,
        [{"id": i + 1, "external_id": uuid.uuid4().hex, "created_at": now} for i in range(100)],
    )
    _insert(
        connection,
        up.users,
        [{"id": i + 1, "external_id": uuid.uuid4().hex, "created_at": now} for i in range(100)],
    )
    _insert(
        connection,
        up.consumer_types,
        [
            {"id": 1, "name": "INSTANCE", "created_at": now},
            {"id": 2, "name": "MIGRATION", "created_at": now},
        ],
    )
    consumers = allocations // len(CONSUMER_ALLOCATION)
    consumer_rows = [
        {
            "id": i + 1,
            "uuid": str(uuid.uuid4()),
            "project_id": i % 100 + 1,
            "user_id": i % 100 + 1,
            "generation": 1,
            "consumer_type_id": 1 if i % 10 else 2,
            "created_at": now,
        }
        for i in range(consumers)
    ]
    _insert(connection, up.consumers, consumer_rows)
    allocation_rows = [
        {
            "resource_provider_id": 2 * (consumer["id"] % roots) + 1,
            "consumer_id": consumer["uuid"],
            "resource_class_id": classes[name],
            "used": used,
            "created_at": now,
        }
        for consumer in consumer_rows
        for name, used in CONSUMER_ALLOCATION.items()
    ]
    _insert(connection, up.allocations, allocation_rows)
    return {
        "providers": len(provider_rows),
        "inventories": len(inventory_rows),
        "consumers": len(consumer_rows),
        "allocations": len(allocation_rows),
    }
