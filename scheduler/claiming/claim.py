"""Claim in weight order: write the host's allocation request for the consumer;
on 409 (another writer got there first, or the host is full) try the next
host, at most ``claim_attempts`` hosts. Releasing gives claims back. Claims
are written through the ``ClaimBatcher``, with other requests' claims when
they queue up; the answer each claim gets is its own.

The host's usage is reserved before the claim is sent (the Kubernetes
scheduler's "assume"), so decisions made while the claim is in flight see
it; a refused or failed claim gives the reservation back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from placement_client import PlacementError
from placement_client.errors import CONCURRENT_UPDATE, SERVER_GROUP_VIOLATION
from scheduler.answers.explain import ClaimAttempt
from scheduler.claiming.claim_batcher import ClaimBatcher
from scheduler.placement.client import (
    AllocationRequest,
    ClaimOutcome,
    GroupRule,
    MovingFrom,
    NewClaim,
    SchedulerPlacement,
)
from scheduler.placement.host_state import HostState, Reservation


@dataclass
class ClaimResult:
    host: HostState | None = None
    request: AllocationRequest | None = None
    reservation: Reservation | None = None
    attempts: list[ClaimAttempt] = field(default_factory=list)

    # Hosts refused for want of capacity, not for a generation conflict.
    stale: list[str] = field(default_factory=list)
    # Placement refused the last claim for the server group's rule: where the group's
    # members run changed since the decision, which is made again.
    group_refused: bool = False

    @property
    def lost(self) -> list[str]:
        """Hosts whose claim was refused: their in-memory state is stale."""
        return [a.uuid for a in self.attempts if a.outcome == "conflict"]

    def why_unclaimed(self) -> str:
        if not self.attempts:
            return "no host was left to claim on"
        tried = "; ".join(f"{a.host}: {a.detail or a.outcome}" for a in self.attempts)
        return f"Placement refused every claim tried ({tried})"


@dataclass(frozen=True)
class ReleaseResult:
    released: list[str]
    not_found: list[str]
    failed: dict[str, str]


class Claimer:
    def __init__(self, client: SchedulerPlacement, writer: ClaimBatcher, *, attempts: int) -> None:
        self._client = client
        self._writer = writer
        self._attempts = attempts

    async def claim(
        self,
        consumer: str,
        ordered: Sequence[HostState],
        *,
        project_id: str,
        user_id: str,
        group: GroupRule | None = None,
        moving: MovingFrom | None = None,
    ) -> ClaimResult:
        result = ClaimResult()
        for host in ordered:
            if len(result.attempts) >= self._attempts:
                break
            request = host.fitting_request()
            if request is None:
                continue
            reservation = host.consume(request)
            claim = NewClaim(consumer, request, project_id, user_id, group, moving)
            try:
                outcome = await self._writer.claim([claim])
            except BaseException:
                reservation.undo()
                raise
            result.attempts.append(attempt(host, outcome))
            if outcome.claimed:
                result.host, result.request, result.reservation = host, request, reservation
                return result
            reservation.undo()
            if outcome.code == SERVER_GROUP_VIOLATION:
                result.group_refused = True
                return result
            if outcome.code != CONCURRENT_UPDATE:
                result.stale.append(host.uuid)
        return result

    async def release(self, consumers: Sequence[str]) -> ReleaseResult:
        released: list[str] = []
        not_found: list[str] = []
        failed: dict[str, str] = {}
        for consumer in consumers:
            try:
                deleted = await self._client.release(consumer)
            except PlacementError as exc:
                failed[consumer] = str(exc)
                continue
            (released if deleted else not_found).append(consumer)
        return ReleaseResult(released, not_found, failed)


def attempt(host: HostState, outcome: ClaimOutcome) -> ClaimAttempt:
    """The explanation's record of one claim on ``host``, as Placement answered it."""
    details = [outcome.batch_refused] if outcome.batch_refused else []
    if outcome.batch_refused:
        details.append("sent again on its own: " + ("written" if outcome.claimed else "refused"))
    if outcome.detail and not outcome.claimed:
        details.append(outcome.detail)
    return ClaimAttempt(
        host=host.name,
        uuid=host.uuid,
        outcome="claimed" if outcome.claimed else "conflict",
        detail="; ".join(details),
        written_with=outcome.written_with,
    )
