"""Reading an upstream database into a snapshot.

Upstream keeps few foreign keys, so rows may point at nothing; those are
returned as problems instead of rows.
"""

from __future__ import annotations

from sqlalchemy import Connection, Table, func, select

from placement_api.migration import upstream_schema as up
from placement_api.migration.problems import Problem
from placement_api.migration.progress import Phases
from placement_api.migration.snapshot import (
    AllocationRow,
    ConsumerRow,
    InventoryRow,
    ProviderRow,
    Snapshot,
)

BATCH = 10_000


def read_upstream(connection: Connection, phases: Phases) -> tuple[Snapshot, list[Problem]]:
    classes = _names(connection, up.resource_classes)
    traits = _names(connection, up.traits)
    snapshot = Snapshot(resource_classes=list(classes.values()), traits=list(traits.values()))
    problems: list[Problem] = []
    _read_providers(connection, snapshot, problems)
    _read_inventories(connection, classes, snapshot, problems)
    _read_groupings(connection, traits, snapshot, problems)
    snapshot.projects = _externals(connection, up.projects)
    snapshot.users = _externals(connection, up.users)
    snapshot.consumer_types = _names(connection, up.consumer_types)
    snapshot.consumers = [
        ConsumerRow(*row)
        for row in connection.execute(
            select(
                up.consumers.c.id,
                up.consumers.c.uuid,
                up.consumers.c.project_id,
                up.consumers.c.user_id,
                up.consumers.c.consumer_type_id,
                up.consumers.c.generation,
            )
        )
    ]
    _read_allocations(connection, classes, snapshot, problems, phases)
    return snapshot, problems


def _names(connection: Connection, table: Table) -> dict[int, str]:
    return dict(connection.execute(select(table.c.id, table.c.name)).tuples().all())


def _externals(connection: Connection, table: Table) -> dict[int, str]:
    return dict(connection.execute(select(table.c.id, table.c.external_id)).tuples().all())


def _read_providers(connection: Connection, snapshot: Snapshot, problems: list[Problem]) -> None:
    rp = up.resource_providers
    query = select(
        rp.c.id,
        rp.c.uuid,
        rp.c.name,
        rp.c.generation,
        rp.c.root_provider_id,
        rp.c.parent_provider_id,
    )
    for id_, uuid, name, generation, root_id, parent_id in connection.execute(query):
        row = f"id={id_} uuid={uuid}"
        if name is None:
            problems.append(Problem("resource_providers", row, "no name (ours requires one)"))
        elif root_id is None:
            problems.append(Problem("resource_providers", row, "no root provider"))
        else:
            snapshot.providers.append(
                ProviderRow(id_, uuid, name, generation or 0, root_id, parent_id)
            )


def _read_inventories(
    connection: Connection, classes: dict[int, str], snapshot: Snapshot, problems: list[Problem]
) -> None:
    inv = up.inventories
    query = select(
        inv.c.resource_provider_id,
        inv.c.resource_class_id,
        inv.c.total,
        inv.c.reserved,
        inv.c.min_unit,
        inv.c.max_unit,
        inv.c.step_size,
        inv.c.allocation_ratio,
    )
    for provider_id, class_id, *amounts in connection.execute(query):
        name = classes.get(class_id)
        if name is None:
            row = f"provider id={provider_id} class id={class_id}"
            problems.append(Problem("inventories", row, "unknown resource class"))
        else:
            snapshot.inventories.append(InventoryRow(provider_id, name, *amounts))


def _read_groupings(
    connection: Connection, traits: dict[int, str], snapshot: Snapshot, problems: list[Problem]
) -> None:
    for id_, uuid in connection.execute(
        select(up.placement_aggregates.c.id, up.placement_aggregates.c.uuid)
    ):
        if uuid is None:
            problems.append(Problem("placement_aggregates", f"id={id_}", "no uuid"))
        else:
            snapshot.aggregates[id_] = uuid
    links = up.resource_provider_aggregates
    snapshot.provider_aggregates = list(
        connection.execute(select(links.c.resource_provider_id, links.c.aggregate_id)).tuples()
    )
    rpt = up.resource_provider_traits
    for provider_id, trait_id in connection.execute(
        select(rpt.c.resource_provider_id, rpt.c.trait_id)
    ):
        if trait_id in traits:
            snapshot.provider_traits.append((provider_id, traits[trait_id]))
        else:
            row = f"provider id={provider_id} trait id={trait_id}"
            problems.append(Problem("resource_provider_traits", row, "unknown trait"))


def _read_allocations(
    connection: Connection,
    classes: dict[int, str],
    snapshot: Snapshot,
    problems: list[Problem],
    phases: Phases,
) -> None:
    alloc = up.allocations
    total = connection.execute(select(func.count()).select_from(alloc)).scalar_one()
    advance = phases.start("reading allocations", total)
    consumer_ids = {consumer.uuid: consumer.id for consumer in snapshot.consumers}
    query = select(alloc.c.resource_provider_id, alloc.c.consumer_id, alloc.c.resource_class_id)
    result = connection.execution_options(stream_results=True).execute(
        query.add_columns(alloc.c.used)
    )
    for batch in result.partitions(BATCH):
        for provider_id, consumer_uuid, class_id, used in batch:
            consumer_id = consumer_ids.get(consumer_uuid)
            name = classes.get(class_id)
            if consumer_id is None or name is None:
                reason = "no consumer row" if consumer_id is None else "unknown resource class"
                row = f"consumer {consumer_uuid} provider id={provider_id} class id={class_id}"
                problems.append(Problem("allocations", row, reason))
            else:
                snapshot.allocations.append(AllocationRow(provider_id, consumer_id, name, used))
        advance(len(batch))
