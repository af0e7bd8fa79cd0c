"""Where allocations go when the tree changes shape: the pure rule, without a server."""

from __future__ import annotations

from agent.inventory import HostPlan, InventoryRecord, ProviderPlan
from agent.relayout import TreeProvider, hold_back, plan_relayout

ROOT, CELL0, CELL1 = "root", "cell0", "cell1"


def record(total: int, ratio: float = 1.0) -> InventoryRecord:
    return InventoryRecord(total=total, max_unit=total, allocation_ratio=ratio)


CELL = {"VCPU": record(4), "MEMORY_MB": record(1024)}
FLAT = {"VCPU": record(8), "MEMORY_MB": record(2048), "DISK_GB": record(100)}


def test_numa_off_moves_every_cell_allocation_to_the_root_and_empties_the_cells():
    tree = {
        ROOT: TreeProvider(ROOT, 1, {"DISK_GB": record(100)}, {"a": {"DISK_GB": 10}}),
        CELL0: TreeProvider(CELL0, 1, CELL, {"a": {"VCPU": 2, "MEMORY_MB": 512}}),
        CELL1: TreeProvider(CELL1, 1, CELL, {"b": {"VCPU": 1, "MEMORY_MB": 256}}),
    }

    relayout = plan_relayout(tree, {ROOT: FLAT}, [CELL0, CELL1])

    assert {(m.consumer, m.source, m.target) for m in relayout.moves} == {
        ("a", CELL0, ROOT),
        ("b", CELL1, ROOT),
    }
    assert relayout.inventories == {ROOT: FLAT, CELL0: {}, CELL1: {}}
    assert not relayout.held
    assert not relayout.kept


def test_numa_on_places_consumers_whole_largest_first_on_the_first_cell_with_room():
    tree = {
        ROOT: TreeProvider(
            ROOT,
            3,
            FLAT,
            {"small": {"VCPU": 1, "MEMORY_MB": 256}, "big": {"VCPU": 3, "MEMORY_MB": 1024}},
        ),
        CELL0: TreeProvider(CELL0, 0, {}),
        CELL1: TreeProvider(CELL1, 0, {}),
    }
    wanted = {ROOT: {"DISK_GB": record(100)}, CELL0: CELL, CELL1: CELL}

    relayout = plan_relayout(tree, wanted, [])

    assert {m.consumer: m.target for m in relayout.moves} == {"big": CELL0, "small": CELL1}
    assert relayout.inventories == {ROOT: {"DISK_GB": record(100)}, CELL0: CELL, CELL1: CELL}


def test_consumer_that_fits_no_cell_holds_its_classes_back_for_everyone():
    tree = {
        ROOT: TreeProvider(
            ROOT, 3, FLAT, {"huge": {"VCPU": 6, "MEMORY_MB": 256}, "ok": {"VCPU": 1}}
        ),
        CELL0: TreeProvider(CELL0, 0, {}),
    }
    wanted = {ROOT: {"DISK_GB": record(100)}, CELL0: CELL}

    relayout = plan_relayout(tree, wanted, [])

    assert set(relayout.held) == {"VCPU", "MEMORY_MB"}
    assert "huge" in relayout.held["VCPU"]
    assert relayout.moves == ()
    assert relayout.inventories == {}


def test_held_classes_are_kept_off_providers_that_do_not_carry_them_yet():
    tree = {ROOT: TreeProvider(ROOT, 3, FLAT), CELL0: TreeProvider(CELL0, 0, {})}
    plan = HostPlan(
        root=ProviderPlan(ROOT, "host", None, {"DISK_GB": record(100)}, frozenset()),
        children=(ProviderPlan(CELL0, "host_NUMA0", ROOT, CELL, frozenset()),),
    )

    held = hold_back(plan, tree, {"VCPU", "MEMORY_MB"})

    assert held.children[0].inventories == {}
    assert held.root.inventories == {"DISK_GB": record(100)}


def test_leaving_provider_with_allocations_no_one_can_take_is_kept():
    custom = {"CUSTOM_FPGA": record(2)}
    tree = {
        ROOT: TreeProvider(ROOT, 1, FLAT),
        CELL0: TreeProvider(CELL0, 1, custom, {"a": {"CUSTOM_FPGA": 1}}),
    }

    relayout = plan_relayout(tree, {ROOT: FLAT}, [CELL0])

    assert CELL0 in relayout.kept
    assert "CUSTOM_FPGA" in relayout.kept[CELL0]
    assert relayout.inventories == {}


def test_unit_limits_of_the_target_are_respected():
    tree = {
        ROOT: TreeProvider(ROOT, 1, {}),
        CELL0: TreeProvider(CELL0, 1, {"VCPU": record(8)}, {"a": {"VCPU": 3}}),
    }
    stepped = {"VCPU": InventoryRecord(total=8, max_unit=8, step_size=2)}

    relayout = plan_relayout(tree, {ROOT: stepped}, [CELL0])

    assert set(relayout.held) == {"VCPU"}


def test_a_device_gone_with_allocations_keeps_them_rather_than_move_them_to_another():
    vfs = {"SRIOV_NET_VF": record(4)}
    tree = {
        ROOT: TreeProvider(ROOT, 1, {"DISK_GB": record(100)}),
        "nic1": TreeProvider("nic1", 1, vfs, {"a": {"SRIOV_NET_VF": 1}}),
        "nic2": TreeProvider("nic2", 1, vfs),
    }
    wanted = {ROOT: {"DISK_GB": record(100)}, "nic2": vfs}

    moved = plan_relayout(tree, wanted, ["nic1"])
    assert [(m.source, m.target) for m in moved.moves] == [("nic1", "nic2")]  # cells would

    relayout = plan_relayout(tree, wanted, ["nic1"], pinned=["nic1", "nic2"])
    assert relayout.moves == ()
    assert relayout.inventories == {}
    assert "SRIOV_NET_VF" in relayout.kept["nic1"]
