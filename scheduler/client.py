"""A typed async client for the parts of the Placement API the scheduler uses.

Every request speaks microversion 1.39. A claim is ``PUT /allocations/{consumer}``
with ``consumer_generation: null`` (the consumer must be new), so two
schedulers can never both own one consumer, and Placement refuses any write
that would exceed a provider's capacity. The claims of a multi-instance
request can go together in one ``POST /allocations``, written all or nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

MICROVERSION = "1.39"
CONFLICT = 409
# A 409 with this code lost a generation race; without it, the claim did not fit.
CONCURRENT_UPDATE = "placement.concurrent_update"
# Idle connections are dropped before servers drop them (uvicorn: after 5 s), so a
# claim is never sent on a connection being closed: its outcome would be unknown.
KEEPALIVE_SECONDS = 3.0


class PlacementError(Exception):
    """Placement answered with an unexpected status, or could not be reached."""

    def __init__(self, method: str, path: str, status: int | None, detail: str, code: str = ""):
        where = f"{method} {path}"
        super().__init__(f"{where} -> {status or 'no answer'}: {detail}")
        self.method = method
        self.path = path
        self.status = status
        self.detail = detail
        self.code = code


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


class PlacementClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 32,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={
                "x-auth-token": token,
                "openstack-api-version": f"placement {MICROVERSION}",
                "accept": "application/json",
            },
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(
                max_connections=max_connections, keepalive_expiry=KEEPALIVE_SECONDS
            ),
        )
        self.base_url = base_url

    async def aclose(self) -> None:
        await self._http.aclose()

    async def allocation_candidates(self, query: Sequence[tuple[str, str]]) -> CandidatesResponse:
        response = await self._send("GET", "/allocation_candidates", params=list(query))
        self._expect(response, 200)
        return CandidatesResponse.model_validate_json(response.content)

    async def claim(self, claim: NewClaim, *, consumer_type: str) -> ClaimOutcome:
        body = _new_consumer(claim, consumer_type)
        response = await self._send("PUT", f"/allocations/{claim.consumer}", json=body)
        return self._claim_outcome(response, 1)

    async def claim_together(
        self, claims: Sequence[NewClaim], *, consumer_type: str
    ) -> ClaimOutcome:
        """Claim for several new consumers in one ``POST /allocations``: Placement
        writes all of them or, with a 409, none."""
        body = {claim.consumer: _new_consumer(claim, consumer_type) for claim in claims}
        response = await self._send("POST", "/allocations", json=body)
        return self._claim_outcome(response, len(claims))

    def _claim_outcome(self, response: httpx.Response, claims: int) -> ClaimOutcome:
        if response.status_code == CONFLICT:
            detail, code = _error_of(response)
            return ClaimOutcome(claimed=False, detail=detail, code=code, written_with=claims)
        self._expect(response, 204)
        return ClaimOutcome(claimed=True, written_with=claims)

    async def release(self, consumer: str) -> bool:
        """Delete the consumer's allocations; False when it had none."""
        response = await self._send("DELETE", f"/allocations/{consumer}")
        if response.status_code == 404:
            return False
        self._expect(response, 204)
        return True

    async def consumer_allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        response = await self._send("GET", f"/allocations/{consumer}")
        self._expect(response, 200)
        allocations: Mapping[str, Any] = response.json().get("allocations", {})
        return {rp: dict(entry["resources"]) for rp, entry in allocations.items()}

    async def providers(self) -> list[ProviderRecord]:
        response = await self._send("GET", "/resource_providers")
        self._expect(response, 200)
        return [ProviderRecord.model_validate(rp) for rp in response.json()["resource_providers"]]

    async def providers_in_aggregate(self, aggregate: str) -> set[str]:
        response = await self._send("GET", "/resource_providers", params={"member_of": aggregate})
        self._expect(response, 200)
        return {rp["uuid"] for rp in response.json()["resource_providers"]}

    async def consumer_count(self, provider: str) -> int:
        response = await self._send("GET", f"/resource_providers/{provider}/allocations")
        self._expect(response, 200)
        return len(response.json().get("allocations", {}))

    async def ping(self) -> bool:
        try:
            response = await self._http.get("/")
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self._http.request(method, path, **kwargs)
        except (TimeoutError, httpx.HTTPError) as exc:
            raise PlacementError(method, path, None, f"{type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _expect(response: httpx.Response, status: int) -> None:
        if response.status_code != status:
            detail, code = _error_of(response)
            raise PlacementError(
                response.request.method,
                response.request.url.path,
                response.status_code,
                detail,
                code,
            )


def _new_consumer(claim: NewClaim, consumer_type: str) -> dict[str, Any]:
    return claim.request.claim_body() | {
        "project_id": claim.project_id,
        "user_id": claim.user_id,
        "consumer_generation": None,
        "consumer_type": consumer_type,
    }


def _error_of(response: httpx.Response) -> tuple[str, str]:
    """The detail and code of a Placement error body, or the raw text."""
    try:
        first = response.json()["errors"][0]
        return str(first.get("detail", "")), str(first.get("code", ""))
    except (ValueError, KeyError, IndexError, TypeError):
        return response.text[:500], ""
