"""The Placement calls the scheduler makes, typed, over the shared ``placement_client``.

Every request speaks the microversion the client settled (1.39). A claim is
``PUT /allocations/{consumer}`` with ``consumer_generation: null`` (the
consumer must be new), so two schedulers can never both own one consumer,
and Placement refuses any write that would exceed a provider's capacity.
The claims of a multi-instance request can go together in one
``POST /allocations``, written all or nothing. Candidates and a provider's
figures are read with the furthest ``X-Placement-Read-After`` position the
claims were answered with, so an API reading from a standby answers them
with every claim written so far (docs/ha.md).
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


class ConsumerRecord(_Response):
    """``GET /allocations/{consumer}`` of a consumer that holds something."""

    allocations: dict[str, ProviderAllocation]
    project_id: str
    user_id: str
    consumer_generation: int
    consumer_type: str = "INSTANCE"

    def amounts(self) -> dict[str, dict[str, int]]:
        return {rp: dict(share.resources) for rp, share in self.allocations.items()}


class ServerGroupRecord(_Response):
    """``GET /server_groups/{uuid}``, an extension of this API."""

    uuid: str
    policy: str
    max_server_per_host: int
    members: dict[str, list[str]]  # consumer -> hosts (root provider uuids)

    def hosts(self) -> dict[str, set[str]]:
        """host -> the members with allocations there."""
        found: dict[str, set[str]] = {}
        for member, hosts in self.members.items():
            for host in hosts:
                found.setdefault(host, set()).add(member)
        return found


class ProviderRecord(_Response):
    uuid: str
    name: str
    generation: int = 0
    parent_provider_uuid: str | None = None
    root_provider_uuid: str


@dataclass(frozen=True)
class GroupRule:
    """The server group a claim names: Placement keeps its rule in the claim's own
    transaction (an extension of this service, docs/server-groups.md)."""

    uuid: str
    policy: str
    max_server_per_host: int = 1

    def body(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "policy": self.policy,
            "max_server_per_host": self.max_server_per_host,
        }


@dataclass(frozen=True)
class MovingFrom:
    """A move's claim: the consumer holds allocations (at ``generation``) that go to
    the new ``migration`` consumer, in the same write as its new ones."""

    generation: int
    migration: str
    allocations: Mapping[str, Mapping[str, int]]
    consumer_type: str


@dataclass(frozen=True)
class NewClaim:
    """The allocations to write for a consumer: one that holds nothing yet or, with
    ``moving``, one whose allocations move to a migration consumer."""

    consumer: str
    request: AllocationRequest
    project_id: str
    user_id: str
    group: GroupRule | None = None
    moving: MovingFrom | None = None

    @property
    def consumers(self) -> frozenset[str]:
        """Every consumer the claim writes."""
        if self.moving is None:
            return frozenset((self.consumer,))
        return frozenset((self.consumer, self.moving.migration))

    def bodies(self, consumer_type: str) -> dict[str, dict[str, Any]]:
        """The claim's entries of a ``POST /allocations``, by consumer."""
        owner = {"project_id": self.project_id, "user_id": self.user_id}
        body = self.request.claim_body() | owner
        body["consumer_generation"] = None if self.moving is None else self.moving.generation
        body["consumer_type"] = consumer_type
        if self.group is not None:
            body["server_group"] = self.group.body()
        bodies = {self.consumer: body}
        if self.moving is not None:
            source = {rp: {"resources": dict(r)} for rp, r in self.moving.allocations.items()}
            bodies[self.moving.migration] = owner | {
                "allocations": source,
                "consumer_generation": None,
                "consumer_type": self.moving.consumer_type,
            }
        return bodies


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


READ_AFTER = "X-Placement-Read-After"


class SchedulerPlacement:
    def __init__(self, client: PlacementClient) -> None:
        self.client = client
        self._written: str | None = None  # the furthest position a claim was answered with

    @property
    def microversion(self) -> str:
        return str(self.client.microversion)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def allocation_candidates(self, query: Sequence[tuple[str, str]]) -> CandidatesResponse:
        response = await self.client.request(
            "GET", "/allocation_candidates", params=list(query), headers=self._read_after()
        )
        return CandidatesResponse.model_validate_json(response.content)

    async def claim(self, claim: NewClaim, *, consumer_type: str) -> ClaimOutcome:
        bodies = claim.bodies(consumer_type)
        if len(bodies) > 1:
            return await self._claim("POST", "/allocations", bodies, 1)
        return await self._claim("PUT", f"/allocations/{claim.consumer}", bodies[claim.consumer], 1)

    async def claim_together(
        self, claims: Sequence[NewClaim], *, consumer_type: str
    ) -> ClaimOutcome:
        """Claim for several new consumers in one ``POST /allocations``: Placement
        writes all of them or, with a 409, none."""
        body = {c: b for claim in claims for c, b in claim.bodies(consumer_type).items()}
        return await self._claim("POST", "/allocations", body, len(claims))

    async def _claim(self, method: str, path: str, body: Any, claims: int) -> ClaimOutcome:
        try:
            response = await self.client.request(method, path, json=body)
        except Conflict as refused:
            return ClaimOutcome(
                claimed=False, detail=refused.detail, code=refused.code, written_with=claims
            )
        self._written = furthest(self._written, response.headers.get(READ_AFTER))
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

    async def consumers_on(self, provider: str) -> set[str]:
        """The consumers holding allocations on the provider (not its children)."""
        body = await self.client.get(f"/resource_providers/{provider}/allocations")
        return set(body.get("allocations", {}))

    async def consumer(self, consumer: str) -> ConsumerRecord | None:
        """What the consumer holds, with its owner and generation; None when nothing."""
        body = await self.client.get(f"/allocations/{consumer}")
        if not body.get("allocations"):
            return None
        return ConsumerRecord.model_validate(body)

    async def server_group(self, group: str) -> ServerGroupRecord | None:
        """The group's rule and where its members run, as Placement keeps them; None for
        a group no claim named yet (or an API without server groups)."""
        try:
            body = await self.client.get(f"/server_groups/{group}")
        except NotFound:
            return None
        return ServerGroupRecord.model_validate(body)

    async def server_groups_of(self, consumer: str) -> list[ServerGroupRecord]:
        """The groups the consumer is a member of (none from an API without them)."""
        try:
            body = await self.client.get("/server_groups", params={"member": consumer})
        except NotFound:
            return []
        return [ServerGroupRecord.model_validate(g) for g in body.get("server_groups", [])]

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
        path, headers = f"/resource_providers/{provider}", self._read_after()
        inventories = await self.client.request("GET", f"{path}/inventories", headers=headers)
        usages = await self.client.request("GET", f"{path}/usages", headers=headers)
        used: dict[str, int] = usages.json()["usages"]
        return {
            rc: (int((r["total"] - r["reserved"]) * r["allocation_ratio"]), used.get(rc, 0))
            for rc, r in inventories.json()["inventories"].items()
        }

    async def ping(self) -> bool:
        return await self.client.ping()

    def _read_after(self) -> dict[str, str] | None:
        return None if self._written is None else {READ_AFTER: self._written}


def furthest(kept: str | None, answered: str | None) -> str | None:
    """The position a read must reach to see both writes. WAL positions (``0/5A3C2B8``)
    compare; ``primary`` (an API without a standby, or a position it could not read)
    replaces whatever was kept, and a position answered after it replaces it."""
    if answered is None or kept is None:
        return answered or kept
    kept_lsn, answered_lsn = _lsn(kept), _lsn(answered)
    if kept_lsn is not None and answered_lsn is not None and kept_lsn > answered_lsn:
        return kept
    return answered


def _lsn(position: str) -> int | None:
    high, slash, low = position.partition("/")
    try:
        return (int(high, 16) << 32 | int(low, 16)) if slash else None
    except ValueError:
        return None
