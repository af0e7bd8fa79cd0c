"""Moves the way Nova moves: a destination chosen and claimed for an existing
consumer while its source allocation is still held.

One atomic ``POST /allocations`` writes the consumer's destination allocations
(at the generation it was read at) and gives its source allocations to its
migration consumer (``request.move.migration_uuid``). The destination is
decided like any placement (the same filters and weighers; the source host left
out unless ``allow_same_host``), so a lost race moves on to the next host.
Confirm drops the migration consumer's allocations; revert gives them back to
the consumer and drops its destination allocations, in one write.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal
from uuid import UUID

from placement_client import Conflict
from scheduler.answers.results import MoveFinished, MoveResponse
from scheduler.deciding.engine import Scheduler
from scheduler.placement.client import ConsumerRecord, MovingFrom, ProviderAllocation
from scheduler.request.move import MoveRequest, migration_uuid
from scheduler.request.spec import GroupPolicy, Hints, ScheduleRequest, ServerGroupHint

MIGRATION = "MIGRATION"


class MoveError(Exception):
    """A move, confirm or revert that cannot be done; nothing was written."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


class Mover:
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.client = scheduler.client

    async def move(self, request: MoveRequest) -> MoveResponse:
        consumer = str(request.consumer_uuid)
        held = await self._held(consumer)
        migration = migration_uuid(consumer)
        if await self.client.consumer(migration) is not None:
            raise MoveError(
                409,
                "scheduler.move_in_progress",
                f"a move of {consumer} is in progress (migration {migration}): "
                "confirm or revert it first",
            )
        sources = frozenset(await self.scheduler.directory.hosts_of_consumers([consumer]))
        if request.kind == "evacuate":
            await self._refuse_live_source(consumer, sources)
        spec = ScheduleRequest(
            resources=request.resources or ({} if request.flavor else _summed(held)),
            flavor=request.flavor,
            consumer_uuids=[request.consumer_uuid],
            project_id=held.project_id,
            user_id=held.user_id,
            hints=await self._with_group(consumer, request.hints),
        )
        moving = MovingFrom(held.consumer_generation, migration, held.amounts(), MIGRATION)
        excluded = frozenset() if request.allow_same_host else sources
        result = await self.scheduler.schedule(spec, moving=moving, excluded=excluded)
        return MoveResponse(
            selection=result.selections[0],
            migration_uuid=migration,
            explanation=result.explanation,
        )

    async def confirm(self, consumer: str) -> MoveFinished:
        migration = migration_uuid(consumer)
        await self._moving(consumer, migration)
        await self.client.release(migration)
        self.scheduler.host_cache.invalidate()
        return await self._finished(consumer, migration, "confirmed")

    async def revert(self, consumer: str) -> MoveFinished:
        migration = migration_uuid(consumer)
        source = await self._moving(consumer, migration)
        now = await self.client.consumer(consumer)
        owner = {"project_id": source.project_id, "user_id": source.user_id}
        back: dict[str, Any] = owner | {
            "allocations": {rp: {"resources": r} for rp, r in source.amounts().items()},
            "consumer_generation": now.consumer_generation if now else None,
            "consumer_type": now.consumer_type if now else self.scheduler.settings.consumer_type,
        }
        drop = owner | {
            "allocations": {},
            "consumer_generation": source.consumer_generation,
            "consumer_type": MIGRATION,
        }
        try:
            await self.client.client.post("/allocations", json={consumer: back, migration: drop})
        except Conflict as exc:
            raise MoveError(
                409, "scheduler.move_conflict", f"revert refused: {exc.detail}"
            ) from exc
        self.scheduler.host_cache.invalidate()
        return await self._finished(consumer, migration, "reverted")

    async def _with_group(self, consumer: str, hints: Hints) -> Hints:
        """The hints, with the server group the consumer is a member of when they name
        none: a move keeps its group's rule like the consumer's first claim did."""
        if hints.group is not None:
            return hints
        groups = await self.client.server_groups_of(consumer)
        if not groups:
            return hints
        kept = groups[0]
        group = ServerGroupHint(
            uuid=UUID(kept.uuid),
            policy=GroupPolicy(kept.policy),
            max_server_per_host=kept.max_server_per_host,
        )
        return hints.model_copy(update={"group": group})

    async def _held(self, consumer: str) -> ConsumerRecord:
        held = await self.client.consumer(consumer)
        if held is None:
            raise MoveError(
                404, "scheduler.consumer_not_found", f"consumer {consumer} holds no allocations"
            )
        return held

    async def _moving(self, consumer: str, migration: str) -> ConsumerRecord:
        source = await self.client.consumer(migration)
        if source is None:
            raise MoveError(
                404, "scheduler.no_move", f"consumer {consumer} has no move to confirm or revert"
            )
        return source

    async def _refuse_live_source(self, consumer: str, sources: frozenset[str]) -> None:
        """Evacuation is for a host that is down (as Nova's): refuse while its agent is
        known to be alive."""
        heartbeats = await self.scheduler.facts.heartbeats()
        for host in sources:
            beat = heartbeats.by_host.get(host)
            if beat is not None and heartbeats.down_since(host) is None:
                raise MoveError(
                    409,
                    "scheduler.source_host_up",
                    f"cannot evacuate {consumer}: the agent of its host {host} is up "
                    f"(last seen {beat.last_seen.isoformat()}); migrate it instead",
                )

    async def _finished(
        self, consumer: str, migration: str, outcome: Literal["confirmed", "reverted"]
    ) -> MoveFinished:
        now = await self.client.consumer(consumer)
        allocations = {
            rp: ProviderAllocation(resources=r) for rp, r in (now.amounts() if now else {}).items()
        }
        return MoveFinished(
            consumer_uuid=consumer,
            migration_uuid=migration,
            outcome=outcome,
            allocations=allocations,
        )


def _summed(held: ConsumerRecord) -> dict[str, int]:
    """The consumer's amounts per class, over every provider it holds them on."""
    total: Counter[str] = Counter()
    for amounts in held.amounts().values():
        total.update(amounts)
    return dict(total)
