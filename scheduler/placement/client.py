"""The Placement calls the scheduler makes, typed, over the shared ``placement_client``.

Every request speaks the microversion the client settled (1.39). A claim is
``PUT /allocations/{consumer}`` with ``consumer_generation: null`` (the
consumer must be new), so two schedulers can never both own one consumer,
and Placement refuses any write that would exceed a provider's capacity.
The claims of a multi-instance request can go together in one
``POST /allocations``, written all or nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from placement_client import Conflict, NotFound, PlacementClient
from scheduler.placement.heartbeats import HeartbeatsAnswer


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ResourceSummary(_Response):
    capacity: int
    used: int


class ProviderSummary(_Response):
    resources: dict[str, ResourceSummary] = Field(default_factory=dict)
    traits: list[str] = Field(default_factory=list)
    parent_provider_uuid: str | None = None
    root_provider_uuid: str


class ProviderAllocation(_Response):
    resources: dict[str, int]


class AllocationRequest(_Response):
    allocations: dict[str, ProviderAllocation]
    mappings: dict[str, list[str]] = Field(default_factory=dict)

    def claim_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "allocations": {
                rp: {"resources": dict(alloc.resources)} for rp, alloc in self.allocations.items()
            }
        }
        if self.mappings:
            body["mappings"] = {suffix: list(rps) for suffix, rps in self.mappings.items()}
        return body


class CandidatesResponse(_Response):
    allocation_requests: list[AllocationRequest]
    provider_summaries: dict[str, ProviderSummary]


class ProviderRecord(_Response):
    uuid: str
    name: str
    generation: int = 0
    parent_provider_uuid: str | None = None
    root_provider_uuid: str


@dataclass(frozen=True)
class NewClaim:
    """The allocations to write for a consumer that holds nothing yet."""

    consumer: str
    request: AllocationRequest
    project_id: str
    user_id: str


@dataclass(frozen=True)
class ClaimOutcome:
    """``claimed`` False means Placement said 409: capacity or generation lost."""

    claimed: bool
    detail: str = ""
    code: str = ""
    # Claims written (or refused) by the same Placement request, these included.
    written_with: int = 0
    # Set when a larger batch including these claims was refused first.
    batch_refused: str = ""


@dataclass(frozen=True)
class ChangesPage:
    """One answer of ``GET /changes``: the feed's head and the changes after
    ``since``, and the epoch its indexes belong to (None from a Placement
    that names none)."""

    index: int
    changes: list[Mapping[str, Any]]
    epoch: str | None = None


class SchedulerPlacement:
    def __init__(self, client: PlacementClient) -> None:
        self.client = client

    @property
    def microversion(self) -> str:
        return str(self.client.microversion)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def allocation_candidates(self, query: Sequence[tuple[str, str]]) -> CandidatesResponse:
        response = await self.client.request("GET", "/allocation_candidates", params=list(query))
        return CandidatesResponse.model_validate_json(response.content)

    async def claim(self, claim: NewClaim, *, consumer_type: str) -> ClaimOutcome:
        body = _new_consumer(claim, consumer_type)
        return await self._claim("PUT", f"/allocations/{claim.consumer}", body, 1)

    async def claim_together(
        self, claims: Sequence[NewClaim], *, consumer_type: str
    ) -> ClaimOutcome:
        """Claim for several new consumers in one ``POST /allocations``: Placement
        writes all of them or, with a 409, none."""
        body = {claim.consumer: _new_consumer(claim, consumer_type) for claim in claims}
        return await self._claim("POST", "/allocations", body, len(claims))

    async def _claim(self, method: str, path: str, body: Any, claims: int) -> ClaimOutcome:
        try:
            await self.client.request(method, path, json=body)
        except Conflict as refused:
            return ClaimOutcome(
                claimed=False, detail=refused.detail, code=refused.code, written_with=claims
            )
        return ClaimOutcome(claimed=True, written_with=claims)

    async def release(self, consumer: str) -> bool:
        """Delete the consumer's allocations; False when it had none."""
        try:
            await self.client.delete(f"/allocations/{consumer}")
        except NotFound:
            return False
        return True

    async def consumer_allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        body = await self.client.get(f"/allocations/{consumer}")
        allocations: Mapping[str, Any] = body.get("allocations", {})
        return {rp: dict(entry["resources"]) for rp, entry in allocations.items()}

    async def providers(self) -> list[ProviderRecord]:
        body = await self.client.get("/resource_providers")
        return [ProviderRecord.model_validate(rp) for rp in body["resource_providers"]]

    async def providers_in_aggregate(self, aggregate: str) -> set[str]:
        body = await self.client.get("/resource_providers", params={"member_of": aggregate})
        return {rp["uuid"] for rp in body["resource_providers"]}

    async def consumer_count(self, provider: str) -> int:
        body = await self.client.get(f"/resource_providers/{provider}/allocations")
        return len(body.get("allocations", {}))

    async def heartbeats(self) -> HeartbeatsAnswer | None:
        """Every host's last heartbeat; None when the API does not offer them (404)."""
        try:
            response = await self.client.request("GET", "/heartbeats")
        except NotFound:
            return None
        return HeartbeatsAnswer.model_validate_json(response.content)

    async def changes(self, since: int | None, *, wait: int = 0, limit: int = 1000) -> ChangesPage:
        """The changes after ``since`` (None: only the head), waiting up to ``wait``
        seconds for one; 410 (``PlacementError``) when they were pruned."""
        params: dict[str, int] = {"limit": limit, "wait": wait}
        if since is not None:
            params["since"] = since
        body = await self.client.get("/changes", params=params)
        return ChangesPage(int(body["index"]), list(body["changes"]), body.get("epoch"))

    async def provider_figures(self, provider: str) -> dict[str, tuple[int, int]]:
        """(capacity, used) per resource class of one provider, as Placement has them."""
        inventories = await self.client.get(f"/resource_providers/{provider}/inventories")
        usages = (await self.client.get(f"/resource_providers/{provider}/usages"))["usages"]
        return {
            rc: (int((r["total"] - r["reserved"]) * r["allocation_ratio"]), usages.get(rc, 0))
            for rc, r in inventories["inventories"].items()
        }

    async def ping(self) -> bool:
        return await self.client.ping()


def _new_consumer(claim: NewClaim, consumer_type: str) -> dict[str, Any]:
    return claim.request.claim_body() | {
        "project_id": claim.project_id,
        "user_id": claim.user_id,
        "consumer_generation": None,
        "consumer_type": consumer_type,
    }
