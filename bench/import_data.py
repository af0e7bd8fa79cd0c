"""A large upstream Placement database, written by SQL straight into
upstream's schema (made by its migrations): compute nodes with a NUMA child
each, shared aggregates and traits, consumers of two types, and three
allocations (VCPU, MEMORY_MB, DISK_GB) per consumer."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import os_resource_classes
import os_traits
from sqlalchemy import Connection, Table, insert, text

from placement_api.migration import upstream_schema as up

BATCH = 10_000
AGGREGATES = 50
PEOPLE = 100
ROOT_INVENTORY = {"VCPU": 64, "MEMORY_MB": 262_144, "DISK_GB": 4_000}
CHILD_INVENTORY = {"SRIOV_NET_VF": 64}
CONSUMER_ALLOCATION = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}
CLASS_IDS = {name: index for index, name in enumerate(os_resource_classes.STANDARDS)}


def _insert(connection: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    for start in range(0, len(rows), BATCH):
        batch = [{**row, "created_at": now} for row in rows[start : start + BATCH]]
        connection.execute(insert(table), batch)


def generate(connection: Connection, *, providers: int, allocations: int) -> dict[str, int]:
    """Fill an empty upstream database; returns the rows written per table."""
    if connection.dialect.name in ("mysql", "mariadb"):
        # VCPU's id is 0, which MySQL would otherwise read as "the next id".
        connection.execute(
            text("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
        )
    _insert(connection, up.resource_classes, [{"id": i, "name": n} for n, i in CLASS_IDS.items()])
    traits = os_traits.get_traits()
    _insert(connection, up.traits, [{"id": i + 1, "name": n} for i, n in enumerate(traits)])
    roots = providers // 2
    inventories = _providers(connection, roots)
    _groupings(connection, roots, traits.index("HW_CPU_X86_AVX2") + 1)
    consumers = _consumers(connection, allocations // len(CONSUMER_ALLOCATION))
    allocation_rows = [
        {
            "resource_provider_id": 2 * (consumer_id % roots) + 1,
            "consumer_id": consumer_uuid,
            "resource_class_id": CLASS_IDS[name],
            "used": used,
        }
        for consumer_id, consumer_uuid in consumers.items()
        for name, used in CONSUMER_ALLOCATION.items()
    ]
    _insert(connection, up.allocations, allocation_rows)
    return {
        "providers": 2 * roots,
        "inventories": inventories,
        "consumers": len(consumers),
        "allocations": len(allocation_rows),
    }


def _providers(connection: Connection, roots: int) -> int:
    """Roots with odd ids, each with a NUMA child of the next id; returns the inventories."""
    rows: list[dict[str, Any]] = []
    inventories: list[dict[str, Any]] = []
    for index in range(roots):
        root = 2 * index + 1
        for id_, name, parent, amounts in (
            (root, f"cn{index}", None, ROOT_INVENTORY),
            (root + 1, f"cn{index}_numa0", root, CHILD_INVENTORY),
        ):
            rows.append(
                {
                    "id": id_,
                    "uuid": str(uuid.uuid4()),
                    "name": name,
                    "generation": 3 if parent is None else 1,
                    "root_provider_id": root,
                    "parent_provider_id": parent,
                }
            )
            inventories += [
                {
                    "resource_provider_id": id_,
                    "resource_class_id": CLASS_IDS[class_name],
                    "total": total,
                    "reserved": 0,
                    "min_unit": 1,
                    "max_unit": total,
                    "step_size": 1,
                    "allocation_ratio": 1.0,
                }
                for class_name, total in amounts.items()
            ]
    _insert(connection, up.resource_providers, rows)
    _insert(connection, up.inventories, inventories)
    return len(inventories)


def _groupings(connection: Connection, roots: int, trait_id: int) -> None:
    aggregates = [{"id": i + 1, "uuid": str(uuid.uuid4())} for i in range(AGGREGATES)]
    _insert(connection, up.placement_aggregates, aggregates)
    links = [
        {"resource_provider_id": 2 * i + 1, "aggregate_id": i % AGGREGATES + 1}
        for i in range(roots)
    ]
    _insert(connection, up.resource_provider_aggregates, links)
    traits = [{"resource_provider_id": 2 * i + 1, "trait_id": trait_id} for i in range(roots)]
    _insert(connection, up.resource_provider_traits, traits)


def _consumers(connection: Connection, count: int) -> dict[int, str]:
    """Consumers spread over projects and users, one in ten a migration; id -> uuid."""
    for table in (up.projects, up.users):
        _insert(
            connection,
            table,
            [{"id": i + 1, "external_id": uuid.uuid4().hex} for i in range(PEOPLE)],
        )
    _insert(
        connection,
        up.consumer_types,
        [{"id": 1, "name": "INSTANCE"}, {"id": 2, "name": "MIGRATION"}],
    )
    consumers = {i + 1: str(uuid.uuid4()) for i in range(count)}
    rows = [
        {
            "id": id_,
            "uuid": consumer_uuid,
            "project_id": id_ % PEOPLE + 1,
            "user_id": id_ % PEOPLE + 1,
            "generation": 1,
            "consumer_type_id": 2 if id_ % 10 == 0 else 1,
        }
        for id_, consumer_uuid in consumers.items()
    ]
    _insert(connection, up.consumers, rows)
    return consumers
