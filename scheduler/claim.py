"""Claim in weight order: write the host's allocation request for the consumer;
on 409 (another writer got there first, or the host is full) try the next
host, at most ``claim_attempts`` hosts. Releasing gives claims back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.client import AllocationRequest, PlacementClient, PlacementError
from scheduler.explain import ClaimAttempt
from scheduler.host_state import HostState


@dataclass
class ClaimResult:
    host: HostState | None = None
    request: AllocationRequest | None = None
    attempts: list[ClaimAttempt] = field(default_factory=list)

    @property
    def lost(self) -> list[str]:
        """Hosts whose claim was refused: their in-memory state is stale."""
        return [a.uuid for a in self.attempts if a.outcome == "conflict"]


@dataclass(frozen=True)
class ReleaseResult:
    released: list[str]
    not_found: list[str]
    failed: dict[str, str]


class Claimer:
    def __init__(self, client: PlacementClient, *, attempts: int, consumer_type: str) -> None:
        self._client = client
        self._attempts = attempts
        self._consumer_type = consumer_type

    async def claim(
        self, consumer: str, ordered: Sequence[HostState], *, project_id: str, user_id: str
    ) -> ClaimResult:
        result = ClaimResult()
        for host in ordered:
            if len(result.attempts) >= self._attempts:
                break
            request = host.fitting_request()
            if request is None:
                continue
            outcome = await self._client.claim(
                consumer,
                request,
                project_id=project_id,
                user_id=user_id,
                consumer_type=self._consumer_type,
            )
            if outcome.claimed:
                result.attempts.append(
                    ClaimAttempt(host=host.name, uuid=host.uuid, outcome="claimed")
                )
                result.host, result.request = host, request
                return result
            result.attempts.append(
                ClaimAttempt(
                    host=host.name, uuid=host.uuid, outcome="conflict", detail=outcome.detail
                )
            )
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
