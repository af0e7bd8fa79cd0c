"""``placement-agent heal``: repair the drift the reporting pass only reports.

Nova's ``heal_allocations``, for one hypervisor:

- a running domain without an allocation gets one: its vCPUs and memory
  (VCPU, MEMORY_MB) on the first provider of the host's tree that has the
  class with room, root first, written as a new consumer (a consumer created
  meanwhile by someone else wins: the write is refused and reported);
- an allocation on the host's providers whose consumer has no domain here is
  an orphan. Each heal remembers when it first saw one (``heal.json`` in the
  state directory); with ``--delete-orphans``, an orphan seen for longer than
  the grace period loses its allocations on this host, written with the
  consumer generation just read, so a consumer that changed meanwhile is left
  alone. Its allocations on other hosts (a migration's) are kept.

The grace period covers a build in flight: the scheduler claims before the
domain exists.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from agent.discovery.model import Domain
from agent.inventory import InventoryRecord
from agent.placement import AgentPlacement, ConsumerRecord, ProviderRecord
from agent.reconcile import find_drift
from placement_client import BadRequest, Conflict, PlacementError

LEDGER_FILE_NAME = "heal.json"
CONSUMER_TYPE = "INSTANCE"


@dataclass(frozen=True)
class HealOptions:
    project_id: str | None
    user_id: str | None
    delete_orphans: bool
    grace: float
    dry_run: bool


@dataclass(frozen=True)
class Healed:
    consumer: str
    domain: str
    allocations: dict[str, dict[str, int]]


@dataclass(frozen=True)
class Orphan:
    consumer: str
    resources: dict[str, int]
    seen_for: float
    deleted: bool


@dataclass
class HealReport:
    host: str
    provider_uuid: str
    created: list[Healed] = field(default_factory=list)
    # Domain name or consumer -> why it was left as it is.
    not_healed: dict[str, str] = field(default_factory=dict)
    orphans: list[Orphan] = field(default_factory=list)
    # Why this host could not be healed at all (libvirt or Placement unreachable, ...).
    error: str | None = None

    @property
    def drift_left(self) -> bool:
        return bool(self.not_healed) or any(not orphan.deleted for orphan in self.orphans)


class OrphanLedger:
    """When each orphan was first seen, per host, kept across runs in the state
    directory (one run may heal several hosts: ``--host NAME=URI``)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LEDGER_FILE_NAME

    def load(self, host_uuid: str) -> dict[str, float]:
        return dict(self._all().get(host_uuid, {}))

    def save(self, host_uuid: str, first_seen: dict[str, float]) -> None:
        everything = self._all() | {host_uuid: first_seen}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(everything, indent=2, sort_keys=True))

    def _all(self) -> dict[str, dict[str, float]]:
        try:
            found = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        return {host: {c: float(t) for c, t in seen.items()} for host, seen in found.items()}


async def heal(
    client: AgentPlacement,
    root: ProviderRecord,
    domains: tuple[Domain, ...],
    ledger: OrphanLedger,
    options: HealOptions,
) -> HealReport:
    tree = _root_first(await client.list_tree(root.uuid), root.uuid)
    held: dict[str, dict[str, int]] = {}
    for provider in tree:
        for consumer, amounts in (await client.get_provider_allocations(provider.uuid)).items():
            merged = held.setdefault(consumer, {})
            for rc, amount in amounts.items():
                merged[rc] = merged.get(rc, 0) + amount
    drift = find_drift(domains, held)
    report = HealReport(root.name, root.uuid)
    room = await _room(client, tree)
    for domain in drift.domains_without_allocation:
        await _create(client, domain, room, options, report)
    await _orphans(
        client, drift.allocations_without_domain, root.uuid, tree, ledger, options, report
    )
    return report


def _root_first(providers: list[ProviderRecord], root_uuid: str) -> list[ProviderRecord]:
    return sorted(providers, key=lambda p: (p.uuid != root_uuid, p.name))


@dataclass
class Space:
    """What is left of one inventory, and the unit limits an amount must keep."""

    left: int
    record: InventoryRecord

    def takes(self, amount: int) -> bool:
        limits = self.record
        return (
            amount <= self.left
            and limits.min_unit <= amount <= limits.max_unit
            and amount % limits.step_size == 0
        )


Room = dict[str, dict[str, Space]]


async def _room(client: AgentPlacement, tree: list[ProviderRecord]) -> Room:
    """Provider -> class -> its space now (in tree order)."""
    room: Room = {}
    for provider in tree:
        inventories = (await client.get_inventories(provider.uuid)).inventories
        used = await client.get_usages(provider.uuid)
        room[provider.uuid] = {
            rc: Space(record.capacity - used.get(rc, 0), record)
            for rc, record in inventories.items()
        }
    return room


def place(wanted: dict[str, int], room: Room) -> dict[str, dict[str, int]]:
    """Each class on the first provider (in ``room``'s order) that takes all of it;
    empty when one class fits nowhere."""
    placed: dict[str, dict[str, int]] = {}
    for rc, amount in wanted.items():
        provider = next((p for p, space in room.items() if _takes(space, rc, amount)), None)
        if provider is None:
            return {}
        placed.setdefault(provider, {})[rc] = amount
    return placed


def _takes(space: dict[str, Space], rc: str, amount: int) -> bool:
    return rc in space and space[rc].takes(amount)


async def _create(
    client: AgentPlacement,
    domain: Domain,
    room: Room,
    options: HealOptions,
    report: HealReport,
) -> None:
    wanted = {"VCPU": domain.vcpus, "MEMORY_MB": domain.memory_mib}
    placed = place(wanted, room)
    if not placed:
        listed = ", ".join(f"{rc}={n}" for rc, n in wanted.items())
        report.not_healed[domain.name] = f"{listed} fit on no provider of the host (room, units)"
        return
    if options.project_id is None or options.user_id is None:
        report.not_healed[domain.name] = "no owner: give --project-id and --user-id"
        return
    if not options.dry_run:
        consumer = ConsumerRecord(domain.uuid, None, options.project_id, options.user_id, placed)
        try:
            await client.create_consumer(consumer, CONSUMER_TYPE)
        except (Conflict, BadRequest) as refused:
            # Created meanwhile, or a unit limit (max_unit, step_size) the room check
            # does not look at: this domain is left, the others go on.
            report.not_healed[domain.name] = f"not written: {refused.detail}"
            return
    for provider, taken in placed.items():
        for rc, amount in taken.items():
            room[provider][rc].left -= amount
    report.created.append(Healed(domain.uuid, domain.name, placed))


async def _orphans(
    client: AgentPlacement,
    orphans: dict[str, dict[str, int]],
    host_uuid: str,
    tree: list[ProviderRecord],
    ledger: OrphanLedger,
    options: HealOptions,
    report: HealReport,
) -> None:
    now = time.time()
    known = ledger.load(host_uuid)
    first_seen = {consumer: known.get(consumer, now) for consumer in orphans}
    ours = {provider.uuid for provider in tree}
    for consumer, resources in orphans.items():
        seen_for = now - first_seen[consumer]
        deleted = False
        if options.delete_orphans and seen_for >= options.grace and not options.dry_run:
            deleted = await _remove_here(client, consumer, ours, report)
        if deleted:
            del first_seen[consumer]
        report.orphans.append(Orphan(consumer, resources, seen_for, deleted))
    if not options.dry_run:
        ledger.save(host_uuid, first_seen)


async def _remove_here(
    client: AgentPlacement, consumer: str, ours: set[str], report: HealReport
) -> bool:
    """Its allocations on this host's providers go; the rest it holds stays."""
    try:
        current = await client.get_consumer(consumer)
        kept = {p: held for p, held in current.allocations.items() if p not in ours}
        await client.replace_consumer(
            ConsumerRecord(consumer, current.generation, current.project_id, current.user_id, kept)
        )
    except PlacementError as error:
        report.not_healed[consumer] = f"orphan kept: {error.detail}"
        return False
    return True


def document(reports: list[HealReport], options: HealOptions) -> dict[str, Any]:
    """The JSON report: one entry per host, and the totals over them."""
    hosts = [
        {
            "host": r.host,
            "provider_uuid": r.provider_uuid,
            "created": [vars(h) for h in r.created],
            "not_healed": r.not_healed,
            "orphans": [vars(o) for o in r.orphans],
            "error": r.error,
        }
        for r in reports
    ]
    return {
        "dry_run": options.dry_run,
        "grace_seconds": options.grace,
        "hosts": hosts,
        "totals": {
            "created": sum(len(r.created) for r in reports),
            "not_healed": sum(len(r.not_healed) for r in reports),
            "orphans": sum(len(r.orphans) for r in reports),
            "orphans_deleted": sum(o.deleted for r in reports for o in r.orphans),
            "hosts_failed": sum(r.error is not None for r in reports),
        },
    }


class HostNotReported(Exception):
    """Placement has no provider for this host: the agent has not reported it."""


async def find_root(client: AgentPlacement, root_uuid: str | None, name: str) -> ProviderRecord:
    """The host's root provider: the one the state directory names, else by name."""
    found = await client.get_provider(root_uuid) if root_uuid else None
    found = found or await client.find_provider_by_name(name)
    if found is None or found.parent_uuid is not None:
        raise HostNotReported(
            f"Placement has no root provider for {name}: run the agent (placement-agent "
            "--once) first, or give --provider-name / --state-dir as the agent has them"
        )
    return found


def print_report(console: Console, report: HealReport, options: HealOptions) -> None:
    """One line per action, whole uuids on it: operators grep and paste them."""
    if report.error is not None:
        console.print(f"[red]{report.host}: not healed[/red]: {report.error}")
        return
    would = "would create" if options.dry_run else "created"
    for healed in report.created:
        where = "; ".join(
            f"{', '.join(f'{rc}={n}' for rc, n in amounts.items())} on {provider}"
            for provider, amounts in healed.allocations.items()
        )
        console.print(f"{would} allocation {healed.consumer} ({healed.domain}): {where}")
    for subject, reason in report.not_healed.items():
        console.print(f"[yellow]not healed[/yellow] {subject}: {reason}")
    for orphan in report.orphans:
        amounts = ", ".join(f"{rc}={n}" for rc, n in sorted(orphan.resources.items()))
        state = "deleted" if orphan.deleted else _kept(orphan, options)
        console.print(
            f"orphan {orphan.consumer} holds {amounts} (no domain here; seen for "
            f"{orphan.seen_for:.0f} s): {state}"
        )
    console.print(
        f"{report.host} ({report.provider_uuid}): {len(report.created)} allocation(s) "
        f"{would}, {len(report.orphans)} orphan(s), {len(report.not_healed)} left as they are"
    )


def _kept(orphan: Orphan, options: HealOptions) -> str:
    if not options.delete_orphans:
        return "kept (--delete-orphans removes it)"
    if orphan.seen_for < options.grace:
        return f"kept for its grace period ({options.grace:.0f} s)"
    return "kept"
