"""Give the agent's provider tree the shape of its plan before inventories are synced.

In order: providers the plan names are created or renamed; allocations on
classes that change provider move in ONE ``POST /reshaper`` together with
the inventories on both sides (``relayout.py`` says where); then the agent's
providers the plan no longer has are deleted, children first. A crash
between two steps leaves nothing counted twice: the reshape is atomic, and a
provider it emptied is deleted on the next pass.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent.inventory import (
    HostPlan,
    InventoryRecord,
    is_device_child,
    owns_child,
    resolve_inventories,
)
from agent.placement import AgentPlacement, ConsumerRecord, ProviderRecord, children_first
from agent.relayout import Move, Relayout, TreeProvider, hold_back, plan_relayout
from agent.reporter import ConflictRetriesExhausted, ProviderReport, Reporter, Sleep
from placement_client import ConcurrentUpdate, Conflict, Forbidden, RetryPolicy

log = logging.getLogger(__name__)


class ReshapeForbidden(RuntimeError):
    """Policy refuses the agent's user POST /reshaper."""


@dataclass
class TreeReport:
    moves: tuple[Move, ...] = ()
    deleted: list[str] = field(default_factory=list)
    # Provider the plan no longer has -> why it is still there.
    kept: dict[str, str] = field(default_factory=dict)
    # Providers in the tree that the agent does not own: left alone.
    foreign: list[str] = field(default_factory=list)
    # Class -> why its allocations did not move.
    held: dict[str, str] = field(default_factory=dict)


class TreeKeeper:
    def __init__(
        self,
        client: AgentPlacement,
        reporter: Reporter,
        retry: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._client = client
        self._reporter = reporter
        self._retry = retry
        self._sleep = sleep

    async def settle(
        self, plan: HostPlan, reports: Mapping[str, ProviderReport]
    ) -> tuple[HostPlan, TreeReport]:
        """The plan to sync (without classes held back) and what was done to the tree."""
        for attempt in range(self._retry.attempts):
            try:
                return await self._settle_once(plan, reports)
            except ConcurrentUpdate as conflict:
                log.info("tree of %s changed underneath us: %s", plan.root.name, conflict)
                await self._sleep(self._retry.delay(attempt))
        raise ConflictRetriesExhausted(
            f"tree of {plan.root.name} ({plan.root.uuid}): generation conflict on each of "
            f"{self._retry.attempts} attempts"
        )

    async def _settle_once(
        self, plan: HostPlan, reports: Mapping[str, ProviderReport]
    ) -> tuple[HostPlan, TreeReport]:
        report = TreeReport()
        listed = {p.uuid: p for p in await self._client.list_tree(plan.root.uuid)}
        if plan.root.uuid not in listed:
            return plan, report  # a new host: the sync creates it
        for planned in plan.providers:
            found = listed.get(planned.uuid)
            if found is None or found.name != planned.name:
                listed[planned.uuid] = await self._reporter.ensure_provider(
                    planned, reports[planned.uuid]
                )
        planned_uuids = {p.uuid for p in plan.providers}
        root = plan.root.uuid
        owned = {uuid for uuid, p in listed.items() if owns_child(root, uuid, p.name)}
        leaving = [uuid for uuid in listed if uuid in owned and uuid not in planned_uuids]
        report.foreign = sorted(set(listed) - owned - planned_uuids)
        for uuid in report.foreign:
            log.warning("provider %s (%s) in the tree of %s is not the agent's: left alone",
                        listed[uuid].name, uuid, plan.root.name)  # fmt: skip
        tree = await self._read(listed, [*planned_uuids, *leaving], with_allocations=False)
        wanted = {p.uuid: resolve_inventories(p, tree[p.uuid].inventories) for p in plan.providers}
        devices = [uuid for uuid, p in listed.items() if is_device_child(root, uuid, p.name)]
        relayout = plan_relayout(tree, wanted, leaving, devices)
        if relayout.inventories or leaving:
            tree = await self._read(listed, [*planned_uuids, *leaving], with_allocations=True)
            relayout = plan_relayout(tree, wanted, leaving, devices)
        if relayout.moves:
            await self._reshape(tree, relayout)
        # Without allocations to move no reshape is needed: leaving providers are deleted
        # next and the sync then writes the root before the cells, so a class is taken
        # away before it is added elsewhere (briefly counted once too few, never twice).
        report.moves, report.held, report.kept = relayout.moves, relayout.held, relayout.kept
        for rc, reason in relayout.held.items():
            log.error("%s: %s not moved: %s", plan.root.name, rc, reason)
        await self._delete(listed, leaving, report)
        return hold_back(plan, tree, relayout.held), report

    async def _read(
        self, listed: Mapping[str, ProviderRecord], uuids: list[str], with_allocations: bool
    ) -> dict[str, TreeProvider]:
        tree = {}
        for uuid in uuids:
            provider = listed[uuid]
            allocations: dict[str, dict[str, int]] = {}
            if with_allocations:
                snapshot = await self._client.get_allocations_snapshot(uuid)
                if snapshot.generation != provider.generation:
                    raise ConcurrentUpdate("GET", f"/resource_providers/{uuid}", 409, "changed")
                allocations = snapshot.allocations
            inventories = await self._reporter.inventories_of(provider)
            tree[uuid] = TreeProvider(uuid, provider.generation, inventories, allocations)
        return tree

    async def _reshape(self, tree: Mapping[str, TreeProvider], relayout: Relayout) -> None:
        consumers: dict[str, ConsumerRecord] = {}
        for move in relayout.moves:
            if move.consumer not in consumers:
                consumers[move.consumer] = await self._client.get_consumer(move.consumer)
            _apply(consumers[move.consumer], move, tree[move.source])
        inventories: dict[str, tuple[int, dict[str, InventoryRecord]]] = {
            uuid: (tree[uuid].generation, records) for uuid, records in relayout.inventories.items()
        }
        try:
            await self._client.reshape(inventories, list(consumers.values()))
        except Forbidden as refused:
            raise ReshapeForbidden(
                f"{refused}. Moving allocations between providers is a service's action "
                "(policy placement:reshaper:reshape): give the agent's user the service role"
            ) from refused
        for move in relayout.moves:
            amounts = ", ".join(f"{rc}={n}" for rc, n in sorted(move.resources.items()))
            log.info("moved %s of consumer %s from provider %s to %s",
                     amounts, move.consumer, move.source, move.target)  # fmt: skip

    async def _delete(
        self, listed: Mapping[str, ProviderRecord], leaving: list[str], report: TreeReport
    ) -> None:
        """Children before parents; a provider still parenting another stays."""
        remaining = set(listed)
        for uuid in (p.uuid for p in children_first(listed, leaving)):
            reason = report.kept.get(uuid)
            if reason is None and any(listed[u].parent_uuid == uuid for u in remaining - {uuid}):
                reason = "it still has child providers"
            if reason is None:
                try:
                    await self._client.delete_provider(uuid)
                except Conflict as conflict:
                    reason = conflict.detail
            if reason is not None:
                report.kept[uuid] = reason
                log.warning("provider %s (%s) is no longer reported but stays: %s",
                            listed[uuid].name, uuid, reason)  # fmt: skip
                continue
            remaining.discard(uuid)
            report.deleted.append(uuid)
            log.info("deleted resource provider %s (%s)", listed[uuid].name, uuid)


def _apply(consumer: ConsumerRecord, move: Move, source: TreeProvider) -> None:
    """Move the amounts in the consumer's whole allocation set, if it is as planned."""
    on_source = consumer.allocations.get(move.source, {})
    if any(on_source.get(rc) != source.allocations[consumer.uuid].get(rc) for rc in move.resources):
        raise ConcurrentUpdate("GET", f"/allocations/{consumer.uuid}", 409, "consumer changed")
    for rc, amount in move.resources.items():
        del on_source[rc]
        on_target = consumer.allocations.setdefault(move.target, {})
        on_target[rc] = on_target.get(rc, 0) + amount
