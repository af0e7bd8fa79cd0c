"""Hosts a capacity report leaves out by default: disabled or down.

A host is disabled when its root provider holds ``COMPUTE_STATUS_DISABLED``
(what Nova and ``placement-agent`` set, and schedulers refuse) and down when
its agent missed its heartbeats (``GET /heartbeats``' rule: now is past
``down_after``). A host that never sent a heartbeat is not down: its
liveness is unknown, as the scheduler's liveness filter treats it.
Sharing providers are never hosts, so never left out (docs/capacity.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy import not_, select
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db import dialect
from placement_api.db.driver import fetch_all
from placement_api.db.models import ProviderHeartbeat, ProviderTrait, ResourceProvider, Trait
from placement_api.domain.capacity_report.snapshot import PROVIDER, Snapshot
from placement_api.domain.heartbeats import alive_at

DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"


@dataclass(frozen=True)
class Unavailable:
    """Root provider ids of the hosts disabled, and of those down."""

    disabled: frozenset[int] = frozenset()
    down: frozenset[int] = frozenset()

    @property
    def hosts(self) -> frozenset[int]:
        return self.disabled | self.down


async def read_unavailable(session: AsyncSession, missed_intervals: int) -> Unavailable:
    """Two statements: the roots holding the disabled trait, and the roots whose
    heartbeat is older than ``missed_intervals`` of their own intervals."""
    disabled = await fetch_all(
        session,
        select(ProviderTrait.resource_provider_id)
        .join(Trait, Trait.id == ProviderTrait.trait_id)
        .join(ResourceProvider, ResourceProvider.id == ProviderTrait.resource_provider_id)
        .where(Trait.name == DISABLED_TRAIT, ResourceProvider.parent_provider_id.is_(None)),
    )
    now = await session.scalar(select(dialect.clock(session))) or datetime.now(UTC)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)  # SQLite's are naive, and UTC
    down = await fetch_all(
        session,
        select(ProviderHeartbeat.resource_provider_id).where(
            not_(alive_at(session, now, missed_intervals))
        ),
    )
    return Unavailable(frozenset(row[0] for row in disabled), frozenset(row[0] for row in down))


def hosts_of(snapshot: Snapshot, unavailable: Unavailable) -> Unavailable:
    """Only the hosts among them: trees of the snapshot that are not sharing providers."""
    hosts = {root for provider, root in snapshot.roots.items() if provider not in snapshot.sharing}
    return Unavailable(unavailable.disabled & hosts, unavailable.down & hosts)


def without_hosts(snapshot: Snapshot, excluded: frozenset[int]) -> Snapshot:
    """The snapshot without the trees of these roots (their providers, rows,
    memberships and traits): what a cloud without those hosts would report."""
    if not excluded:
        return snapshot
    roots = {p: r for p, r in snapshot.roots.items() if r not in excluded or p in snapshot.sharing}
    return replace(
        snapshot,
        roots=roots,
        named={p: named for p, named in snapshot.named.items() if p in roots},
        rows=[row for row in snapshot.rows if row[PROVIDER] in roots],
        aggregates_of={p: a for p, a in snapshot.aggregates_of.items() if p in roots},
        traits_of={p: t for p, t in snapshot.traits_of.items() if p in roots},
    )
