"""The checks a move runs on a snapshot before writing, and the order it writes providers in."""

from __future__ import annotations

from placement_api.migration.problems import find_problems
from placement_api.migration.snapshot import (
    AllocationRow,
    ConsumerRow,
    InventoryRow,
    OverCapacity,
    ProviderRow,
    Snapshot,
    parents_first,
)


def provider(id_: int, root: int, parent: int | None = None) -> ProviderRow:
    return ProviderRow(id_, f"uuid-{id_}", f"rp-{id_}", 0, root, parent)


def reasons(snapshot: Snapshot) -> list[tuple[str, str, str]]:
    return [(p.table, p.row, p.reason) for p in find_problems(snapshot)]


def test_parents_come_before_their_children_whatever_the_input_order() -> None:
    providers = [
        provider(4, 1, 3),
        provider(3, 1, 2),
        provider(2, 1, 1),
        provider(1, 1),
        provider(5, 5),
    ]
    ordered = [p.id for p in parents_first(providers)]
    assert ordered.index(1) < ordered.index(2) < ordered.index(3) < ordered.index(4)
    assert sorted(ordered) == [1, 2, 3, 4, 5]


def test_a_sound_tree_has_no_problems() -> None:
    snapshot = Snapshot(
        providers=[provider(1, 1), provider(2, 1, 1)],
        inventories=[InventoryRow(2, "VCPU", 8, 0, 1, 8, 1, 1.0)],
        projects={1: "p"},
        users={1: "u"},
        consumers=[ConsumerRow(7, "c-7", 1, 1, None, 0)],
        allocations=[AllocationRow(2, 7, "VCPU", 2)],
    )
    assert reasons(snapshot) == []


def test_broken_trees_are_named_with_the_reason() -> None:
    snapshot = Snapshot(
        providers=[
            provider(1, 1),
            provider(2, 1, 99),  # a parent that does not exist
            provider(3, 9),  # a root whose root is elsewhere
            provider(4, 3, 1),  # a root differing from its parent's
            provider(5, 1, 6),
            provider(6, 1, 5),  # 5 and 6 are each other's parent
        ]
    )
    assert reasons(snapshot) == [
        ("resource_providers", "id=2 uuid=uuid-2", "its parent does not exist"),
        ("resource_providers", "id=3 uuid=uuid-3", "a root whose root is not itself"),
        ("resource_providers", "id=4 uuid=uuid-4", "its root differs from its parent's"),
        ("resource_providers", "id=5 uuid=uuid-5", "its parents form a cycle"),
        ("resource_providers", "id=6 uuid=uuid-6", "its parents form a cycle"),
    ]


def test_allocations_need_a_consumer_and_an_inventory_and_consumers_their_owners() -> None:
    snapshot = Snapshot(
        providers=[provider(1, 1)],
        inventories=[InventoryRow(1, "VCPU", 8, 0, 1, 8, 1, 1.0)],
        projects={1: "p"},
        users={1: "u"},
        consumers=[ConsumerRow(7, "c-7", 2, 1, 3, 0)],
        allocations=[AllocationRow(1, 8, "VCPU", 1), AllocationRow(1, 7, "DISK_GB", 1)],
    )
    assert [reason for _, _, reason in reasons(snapshot)] == [
        "its project does not exist",
        "its consumer type does not exist",
        "its consumer does not exist",
        "no inventory of that class on that provider",
    ]


def test_inventories_over_capacity_are_those_their_allocations_exceed() -> None:
    snapshot = Snapshot(
        providers=[provider(1, 1), provider(2, 2)],
        inventories=[
            # capacity (8 - 2) * 1.5 = 9
            InventoryRow(1, "VCPU", 8, 2, 1, 8, 1, 1.5),
            InventoryRow(1, "MEMORY_MB", 100, 0, 1, 100, 1, 1.0),
            InventoryRow(2, "VCPU", 8, 2, 1, 8, 1, 1.5),
        ],
        allocations=[
            AllocationRow(1, 10, "VCPU", 5),
            AllocationRow(1, 11, "VCPU", 5),
            AllocationRow(1, 10, "MEMORY_MB", 100),
            AllocationRow(2, 12, "VCPU", 9),
        ],
    )
    assert snapshot.over_capacity() == [OverCapacity("uuid-1", "VCPU", 10, 9.0)]
