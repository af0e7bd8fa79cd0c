"""Rows that cannot be moved, each with the reason, found before anything is written."""

from __future__ import annotations

from dataclasses import dataclass

from placement_api.migration.snapshot import ProviderRow, Snapshot


@dataclass(frozen=True)
class Problem:
    table: str
    row: str
    reason: str


class MigrationError(Exception):
    """A move that must not happen (non-empty target, rows that cannot be moved,
    a check that failed after writing); the transaction is rolled back."""


def find_problems(snapshot: Snapshot) -> list[Problem]:
    """Everything in the snapshot the target's constraints or our derived data would reject."""
    return [
        *_provider_problems(snapshot.providers),
        *_link_problems(snapshot),
        *_consumer_problems(snapshot),
        *_allocation_problems(snapshot),
    ]


def _provider_problems(providers: list[ProviderRow]) -> list[Problem]:
    by_id = {provider.id: provider for provider in providers}
    problems = []
    for provider in providers:
        row = f"id={provider.id} uuid={provider.uuid}"
        parent = by_id.get(provider.parent_id) if provider.parent_id is not None else None
        if provider.parent_id is not None and parent is None:
            problems.append(Problem("resource_providers", row, "its parent does not exist"))
        elif parent is None and provider.root_id != provider.id:
            problems.append(Problem("resource_providers", row, "a root whose root is not itself"))
        elif parent is not None and parent.root_id != provider.root_id:
            problems.append(
                Problem("resource_providers", row, "its root differs from its parent's")
            )
        elif _in_cycle(provider, by_id):
            problems.append(Problem("resource_providers", row, "its parents form a cycle"))
    return problems


def _in_cycle(provider: ProviderRow, by_id: dict[int, ProviderRow]) -> bool:
    seen = {provider.id}
    current = provider
    while current.parent_id is not None and current.parent_id in by_id:
        if current.parent_id in seen:
            return True
        seen.add(current.parent_id)
        current = by_id[current.parent_id]
    return False


def _link_problems(snapshot: Snapshot) -> list[Problem]:
    provider_ids = {provider.id for provider in snapshot.providers}
    problems = [
        Problem("inventories", f"provider id={inv.provider_id} {inv.resource_class}", "no provider")
        for inv in snapshot.inventories
        if inv.provider_id not in provider_ids
    ]
    for provider_id, aggregate_id in snapshot.provider_aggregates:
        row = f"provider id={provider_id} aggregate id={aggregate_id}"
        if provider_id not in provider_ids:
            problems.append(Problem("resource_provider_aggregates", row, "no provider"))
        elif aggregate_id not in snapshot.aggregates:
            problems.append(Problem("resource_provider_aggregates", row, "no aggregate"))
    problems.extend(
        Problem("resource_provider_traits", f"provider id={provider_id} {trait}", "no provider")
        for provider_id, trait in snapshot.provider_traits
        if provider_id not in provider_ids
    )
    return problems


def _consumer_problems(snapshot: Snapshot) -> list[Problem]:
    problems = []
    for consumer in snapshot.consumers:
        row = f"id={consumer.id} uuid={consumer.uuid}"
        if consumer.project_id not in snapshot.projects:
            problems.append(Problem("consumers", row, "its project does not exist"))
        if consumer.user_id not in snapshot.users:
            problems.append(Problem("consumers", row, "its user does not exist"))
        if (
            consumer.consumer_type_id is not None
            and consumer.consumer_type_id not in snapshot.consumer_types
        ):
            problems.append(Problem("consumers", row, "its consumer type does not exist"))
    return problems


def _allocation_problems(snapshot: Snapshot) -> list[Problem]:
    consumer_ids = {consumer.id for consumer in snapshot.consumers}
    inventory_keys = {(inv.provider_id, inv.resource_class) for inv in snapshot.inventories}
    problems = []
    for allocation in snapshot.allocations:
        row = (
            f"consumer id={allocation.consumer_id} provider id={allocation.provider_id} "
            f"{allocation.resource_class}"
        )
        if allocation.consumer_id not in consumer_ids:
            problems.append(Problem("allocations", row, "its consumer does not exist"))
        if (allocation.provider_id, allocation.resource_class) not in inventory_keys:
            problems.append(
                Problem("allocations", row, "no inventory of that class on that provider")
            )
    return problems
