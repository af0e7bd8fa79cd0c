"""Reading our database into a snapshot (for ``db export``)."""

from __future__ import annotations

from sqlalchemy import Connection, select

from placement_api.db import models
from placement_api.migration.ours_target import table
from placement_api.migration.progress import Phases
from placement_api.migration.snapshot import (
    AllocationRow,
    ConsumerRow,
    InventoryRow,
    ProviderRow,
    Snapshot,
)


def read_ours(connection: Connection, phases: Phases) -> Snapshot:
    classes = _names(connection, models.ResourceClass)
    traits = _names(connection, models.Trait)
    rp, inv = table(models.ResourceProvider), table(models.Inventory)
    snapshot = Snapshot(
        resource_classes=list(classes.values()),
        traits=list(traits.values()),
        providers=[
            ProviderRow(*row)
            for row in connection.execute(
                select(
                    rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation, rp.c.root_provider_id
                ).add_columns(rp.c.parent_provider_id)
            )
        ],
        inventories=[
            InventoryRow(provider_id, classes[class_id], *amounts)
            for provider_id, class_id, *amounts in connection.execute(
                select(inv.c.resource_provider_id, inv.c.resource_class_id, inv.c.total)
                .add_columns(inv.c.reserved, inv.c.min_unit, inv.c.max_unit)
                .add_columns(inv.c.step_size, inv.c.allocation_ratio)
            )
        ],
    )
    agg, rpa, rpt = (
        table(models.Aggregate),
        table(models.ProviderAggregate),
        table(models.ProviderTrait),
    )
    snapshot.aggregates = dict(connection.execute(select(agg.c.id, agg.c.uuid)).tuples().all())
    snapshot.provider_aggregates = list(
        connection.execute(select(rpa.c.resource_provider_id, rpa.c.aggregate_id)).tuples()
    )
    snapshot.provider_traits = [
        (provider_id, traits[trait_id])
        for provider_id, trait_id in connection.execute(
            select(rpt.c.resource_provider_id, rpt.c.trait_id)
        )
    ]
    _read_consumers(connection, snapshot)
    _read_allocations(connection, classes, snapshot, phases)
    return snapshot


def _names(connection: Connection, model: type[models.Base]) -> dict[int, str]:
    named = table(model)
    return dict(connection.execute(select(named.c.id, named.c.name)).tuples().all())


def _read_consumers(connection: Connection, snapshot: Snapshot) -> None:
    for model, into in (
        (models.Project, snapshot.projects),
        (models.User, snapshot.users),
    ):
        external = table(model)
        into.update(
            connection.execute(select(external.c.id, external.c.external_id)).tuples().all()
        )
    snapshot.consumer_types = _names(connection, models.ConsumerType)
    consumers = table(models.Consumer)
    snapshot.consumers = [
        ConsumerRow(*row)
        for row in connection.execute(
            select(consumers.c.id, consumers.c.uuid, consumers.c.project_id)
            .add_columns(consumers.c.user_id, consumers.c.consumer_type_id)
            .add_columns(consumers.c.generation)
        )
    ]


def _read_allocations(
    connection: Connection, classes: dict[int, str], snapshot: Snapshot, phases: Phases
) -> None:
    alloc = table(models.Allocation)
    rows = connection.execute(
        select(
            alloc.c.resource_provider_id, alloc.c.consumer_id, alloc.c.resource_class_id
        ).add_columns(alloc.c.used)
    ).all()
    advance = phases.start("reading allocations", len(rows))
    snapshot.allocations = [
        AllocationRow(provider_id, consumer_id, classes[class_id], used)
        for provider_id, consumer_id, class_id, used in rows
    ]
    advance(len(rows))
