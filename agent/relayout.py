"""Where allocations go when the agent's tree changes shape: a pure plan, no I/O.

A class *relocates* when a provider loses it (a provider that leaves the tree,
or one whose plan drops it) while a planned provider carries it: NUMA turned
off moves VCPU and MEMORY_MB from the cells to the root, NUMA turned on moves
them from the root to the cells, a cell gone moves them to the cells left.
Each consumer's amounts on one source move whole (never split) to the first
planned provider, in plan order (the root, then cells by id), that carries
them and where they fit; consumers are placed largest first. A consumer that
fits nowhere holds its classes back: none of them moves this pass and no
provider gains them, so capacity is never counted twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from agent.inventory import HostPlan, InventoryRecord, ProviderPlan, inventories_equal

Amounts = Mapping[str, int]


@dataclass(frozen=True)
class TreeProvider:
    """One provider of the tree as the server showed it."""

    uuid: str
    generation: int
    inventories: Mapping[str, InventoryRecord]
    # Consumer uuid -> class -> amount held on this provider.
    allocations: Mapping[str, Amounts] = field(default_factory=dict)


@dataclass(frozen=True)
class Move:
    consumer: str
    source: str
    target: str
    resources: Amounts


@dataclass(frozen=True)
class Relayout:
    # Provider uuid -> its whole new inventory; empty when nothing relocates.
    inventories: dict[str, dict[str, InventoryRecord]]
    moves: tuple[Move, ...]
    # Class -> why it stays where it is this pass.
    held: dict[str, str]
    # Leaving provider -> why it cannot be deleted yet (allocations that cannot move).
    kept: dict[str, str]


def plan_relayout(
    tree: Mapping[str, TreeProvider],
    wanted: Mapping[str, Mapping[str, InventoryRecord]],
    leaving: Iterable[str],
    pinned: Iterable[str] = (),
) -> Relayout:
    """``wanted``: each planned provider's inventory, in plan order; ``leaving``: the
    agent's providers in the tree that the plan no longer has; ``pinned``: providers
    whose allocations never move (a device: its VFs are not another NIC's)."""
    leaving = tuple(leaving)
    pinned = frozenset(pinned)
    losing = {uuid: lost for uuid, lost in _losing(tree, wanted, leaving).items()
              if uuid not in pinned}  # fmt: skip
    carried = {rc for inventory in wanted.values() for rc in inventory}
    relocating = {rc for lost in losing.values() for rc in lost} & carried
    held: dict[str, str] = {}
    while True:
        moves, refused = _place(tree, wanted, losing, relocating - held.keys())
        if not refused:
            break
        held |= refused
    moving = relocating - held.keys()
    inventories = {}
    for uuid in (*wanted, *leaving):
        current = tree[uuid].inventories if uuid in tree else {}
        new = {rc: r for rc, r in current.items() if rc not in moving}
        new |= {rc: r for rc, r in wanted.get(uuid, {}).items() if rc in moving}
        if not inventories_equal(new, current):
            inventories[uuid] = new
    return Relayout(inventories, moves, held, _kept(tree, leaving, moving))


def hold_back(plan: HostPlan, tree: Mapping[str, TreeProvider], held: Iterable[str]) -> HostPlan:
    """The plan without held classes on providers that do not carry them yet."""
    held = frozenset(held)
    if not held:
        return plan

    def without(planned: ProviderPlan) -> ProviderPlan:
        current = tree[planned.uuid].inventories if planned.uuid in tree else {}
        kept = {rc: r for rc, r in planned.inventories.items() if rc not in held or rc in current}
        return replace(planned, inventories=kept)

    return HostPlan(root=without(plan.root), children=tuple(map(without, plan.children)))


def _losing(
    tree: Mapping[str, TreeProvider],
    wanted: Mapping[str, Mapping[str, InventoryRecord]],
    leaving: tuple[str, ...],
) -> dict[str, set[str]]:
    losing = {uuid: set(tree[uuid].inventories) for uuid in leaving}
    for uuid, inventory in wanted.items():
        if uuid in tree and (dropped := set(tree[uuid].inventories) - set(inventory)):
            losing[uuid] = dropped
    return losing


def _place(
    tree: Mapping[str, TreeProvider],
    wanted: Mapping[str, Mapping[str, InventoryRecord]],
    losing: Mapping[str, set[str]],
    moving: set[str],
) -> tuple[tuple[Move, ...], dict[str, str]]:
    used: dict[tuple[str, str], int] = defaultdict(int)
    mine: dict[tuple[str, str, str], int] = defaultdict(int)
    for uuid in wanted:
        for consumer, held in _allocations(tree, uuid).items():
            for rc, amount in held.items():
                used[uuid, rc] += amount
                mine[consumer, uuid, rc] += amount
    pending = [
        Move(consumer, source, "", resources)
        for source, lost in losing.items()
        for consumer, held in _allocations(tree, source).items()
        if (resources := {rc: n for rc, n in held.items() if rc in lost & moving and n > 0})
    ]
    order = sorted(moving)
    pending.sort(key=lambda m: (tuple(-m.resources.get(rc, 0) for rc in order), m.consumer))
    moves: list[Move] = []
    refused: dict[str, str] = {}
    for move in pending:
        target = next(
            (
                uuid
                for uuid, inventory in wanted.items()
                if uuid != move.source
                and move.resources.keys() <= inventory.keys()
                and all(
                    _fits(inventory[rc], used[uuid, rc], mine[move.consumer, uuid, rc], amount)
                    for rc, amount in move.resources.items()
                )
            ),
            None,
        )
        if target is None:
            reason = _refusal(move)
            refused |= {rc: reason for rc in move.resources}
            continue
        for rc, amount in move.resources.items():
            used[target, rc] += amount
            mine[move.consumer, target, rc] += amount
        moves.append(replace(move, target=target))
    return tuple(moves), refused


def _fits(record: InventoryRecord, used: int, already: int, amount: int) -> bool:
    """The capacity rule and the unit limits, for the consumer's whole amount there."""
    total = already + amount
    units = record.min_unit <= total <= record.max_unit and total % record.step_size == 0
    return units and used + amount <= record.capacity


def _refusal(move: Move) -> str:
    amounts = ", ".join(f"{rc}={n}" for rc, n in sorted(move.resources.items()))
    return (
        f"consumer {move.consumer} holds {amounts} on provider {move.source} and no provider "
        "that will carry them has room for all of it; nothing of these classes moves until "
        "that allocation is freed or moved"
    )


def _kept(
    tree: Mapping[str, TreeProvider], leaving: tuple[str, ...], moving: set[str]
) -> dict[str, str]:
    kept = {}
    for uuid in leaving:
        stuck = sorted(
            {rc for held in _allocations(tree, uuid).values() for rc, n in held.items() if n}
            - moving
        )
        if stuck:
            kept[uuid] = f"allocations of {', '.join(stuck)} that no planned provider can take"
    return kept


def _allocations(tree: Mapping[str, TreeProvider], uuid: str) -> Mapping[str, Amounts]:
    return tree[uuid].allocations if uuid in tree else {}
