"""Make Placement hold what the plan says: ensure providers, diff, write with generations."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agent.inventory import (
    InventoryRecord,
    ProviderPlan,
    inventories_equal,
    resolve_inventories,
    resolve_traits,
)
from agent.placement import AgentPlacement, ProviderRecord
from placement_client import (
    ConcurrentUpdate,
    Conflict,
    DuplicateName,
    InventoryInUse,
    RetryPolicy,
)

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


class ConflictRetriesExhausted(RuntimeError):
    """Other writers kept moving the provider generation for every attempt."""


class ProviderNameTaken(RuntimeError):
    """Another provider, with another uuid, already has the name the agent reports."""


def conflict_retry(retries: int) -> RetryPolicy:
    """Backoff for writes that lost a generation race: short, since the next read
    is what matters, with jitter so agents that collided do not collide again."""
    return RetryPolicy(attempts=retries + 1, base_delay=0.05, max_delay=2.0, budget=float("inf"))


@dataclass
class ProviderReport:
    uuid: str
    name: str
    generation: int = 0
    created: bool = False
    inventory_written: bool = False
    traits_written: bool = False
    conflicts: int = 0
    # Resource class -> why its current record was kept instead of the new one.
    held_in_use: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Known:
    """The provider as the server last showed it, valid while the generation holds."""

    generation: int
    inventories: dict[str, InventoryRecord]
    traits: frozenset[str]


class Reporter:
    def __init__(
        self, client: AgentPlacement, retry: RetryPolicy, sleep: Sleep = asyncio.sleep
    ) -> None:
        self._client = client
        self._retry = retry
        self._sleep = sleep
        self._known: dict[str, _Known] = {}
        self._ensured_names: set[str] = set()

    async def sync(
        self,
        plan: ProviderPlan,
        previously_configured: frozenset[str],
        report: ProviderReport | None = None,
    ) -> ProviderReport:
        report = report or ProviderReport(uuid=plan.uuid, name=plan.name)
        for attempt in range(self._retry.attempts):
            try:
                await self._sync_once(plan, previously_configured, report)
                return report
            except ConcurrentUpdate:
                self._known.pop(plan.uuid, None)
                report.conflicts += 1
                delay = self._retry.delay(attempt)
                log.info("provider %s changed underneath us; retrying in %.2fs", plan.name, delay)
                await self._sleep(delay)
            except InventoryInUse as error:
                self._known.pop(plan.uuid, None)
                if not await self._hold_classes_in_use(plan, report):
                    raise
                log.debug("retrying %s without the classes in use: %s", plan.name, error.detail)
        raise ConflictRetriesExhausted(
            f"provider {plan.name} ({plan.uuid}): generation conflict on each of "
            f"{self._retry.attempts} attempts"
        )

    async def _sync_once(
        self, plan: ProviderPlan, previously_configured: frozenset[str], report: ProviderReport
    ) -> None:
        provider = await self.ensure_provider(plan, report)
        known = await self._current(provider)
        desired = resolve_inventories(plan, known.inventories)
        for resource_class in report.held_in_use:
            desired.pop(resource_class, None)
            if resource_class in known.inventories:
                desired[resource_class] = known.inventories[resource_class]
        if not inventories_equal(desired, known.inventories):
            await self._ensure_custom(desired.keys() - known.inventories.keys(), "resource_class")
            written = await self._client.put_inventories(plan.uuid, known.generation, desired)
            known = _Known(written.generation, written.inventories, known.traits)
            report.inventory_written = True
        wanted = resolve_traits(plan, known.traits, previously_configured)
        if wanted != known.traits:
            await self._ensure_custom(wanted - known.traits, "trait")
            traits = await self._client.put_traits(plan.uuid, known.generation, wanted)
            known = _Known(traits.generation, known.inventories, traits.traits)
            report.traits_written = True
        self._known[plan.uuid] = known
        report.generation = known.generation

    async def ensure_provider(self, plan: ProviderPlan, report: ProviderReport) -> ProviderRecord:
        found = await self._client.get_provider(plan.uuid)
        if found is not None:
            return found if found.name == plan.name else await self.rename(found, plan)
        try:
            created = await self._client.create_provider(plan.uuid, plan.name, plan.parent_uuid)
        except Conflict as conflict:
            # Another writer may have created this very provider since our GET.
            found = await self._client.get_provider(plan.uuid)
            if found is not None:
                return found
            holder = await self._client.find_provider_by_name(plan.name)
            holder_uuid = holder.uuid if holder else "unknown"
            raise ProviderNameTaken(
                f"cannot create provider {plan.name} ({plan.uuid}): the name belongs to "
                f"provider {holder_uuid}. Fix the state file or the provider name."
            ) from conflict
        log.info("created resource provider %s (%s)", plan.name, plan.uuid)
        report.created = True
        return created

    async def rename(self, found: ProviderRecord, plan: ProviderPlan) -> ProviderRecord:
        """The uuid is the provider's identity; a host renamed keeps it under its new name."""
        try:
            renamed = await self._client.rename_provider(plan.uuid, plan.name, plan.parent_uuid)
        except DuplicateName as conflict:
            holder = await self._client.find_provider_by_name(plan.name)
            raise ProviderNameTaken(
                f"cannot rename provider {found.name} ({plan.uuid}) to {plan.name}: the name "
                f"belongs to provider {holder.uuid if holder else 'unknown'}"
            ) from conflict
        log.info("renamed resource provider %s (%s) to %s", found.name, plan.uuid, plan.name)
        return renamed

    async def inventories_of(self, provider: ProviderRecord) -> dict[str, InventoryRecord]:
        """The provider's inventory at the generation given, read unless already known."""
        known = await self._current(provider)
        if known.generation != provider.generation:
            raise ConcurrentUpdate(
                "GET", f"/resource_providers/{provider.uuid}", 409, "provider changed between reads"
            )
        self._known[provider.uuid] = known  # the sync that follows reads it from here
        return known.inventories

    async def _current(self, provider: ProviderRecord) -> _Known:
        known = self._known.get(provider.uuid)
        if known is not None and known.generation == provider.generation:
            return known
        inventory = await self._client.get_inventories(provider.uuid)
        traits = await self._client.get_traits(provider.uuid)
        if inventory.generation != traits.generation:
            raise ConcurrentUpdate(
                "GET", f"/resource_providers/{provider.uuid}", 409, "provider changed between reads"
            )
        return _Known(inventory.generation, inventory.inventories, traits.traits)

    async def _ensure_custom(self, names: set[str] | frozenset[str], kind: str) -> None:
        for name in sorted(names):
            if not name.startswith("CUSTOM_") or name in self._ensured_names:
                continue
            if kind == "trait":
                await self._client.ensure_trait(name)
            else:
                await self._client.ensure_resource_class(name)
            self._ensured_names.add(name)

    async def _hold_classes_in_use(self, plan: ProviderPlan, report: ProviderReport) -> bool:
        """Keep the server's record of classes allocations still need; True if any is new."""
        usages = await self._client.get_usages(plan.uuid)
        current = (await self._client.get_inventories(plan.uuid)).inventories
        desired = resolve_inventories(plan, current)
        newly_held = False
        for resource_class, used in sorted(usages.items()):
            if used <= 0 or resource_class not in current or resource_class in report.held_in_use:
                continue
            wanted = desired.get(resource_class)
            if wanted is not None and wanted.capacity >= used:
                continue
            change = "remove it" if wanted is None else f"leave capacity {wanted.capacity}"
            reason = (
                f"{used} {resource_class} are allocated and the new inventory would {change}; "
                "the current record is kept until those allocations are freed"
            )
            log.error("provider %s: %s", plan.name, reason)
            report.held_in_use[resource_class] = reason
            newly_held = True
        return newly_held
