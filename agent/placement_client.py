"""A typed Placement API client (microversion 1.39) for what the agent needs."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Self

import httpx

from agent.inventory import InventoryRecord

log = logging.getLogger(__name__)

MICROVERSION = "placement 1.39"
CONCURRENT_UPDATE = "placement.concurrent_update"
INVENTORY_IN_USE = "placement.inventory.inuse"
DUPLICATE_NAME = "placement.duplicate_name"


class PlacementUnavailable(RuntimeError):
    """The API could not be reached or failed on its side (5xx)."""


class PlacementError(RuntimeError):
    def __init__(self, status: int, code: str | None, detail: str, request_id: str | None):
        super().__init__(f"{status} {code or 'no code'}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.request_id = request_id


class ConcurrentUpdate(PlacementError):
    """The provider generation moved: someone else wrote first."""


class InventoryInUse(PlacementError):
    """Allocations hold a class the inventory write would remove or shrink."""


class ProviderConflict(PlacementError):
    """A provider with this name or uuid already exists."""


class NotFound(PlacementError):
    pass


_ERRORS_BY_CODE: dict[str, type[PlacementError]] = {
    CONCURRENT_UPDATE: ConcurrentUpdate,
    INVENTORY_IN_USE: InventoryInUse,
    DUPLICATE_NAME: ProviderConflict,
}


@dataclass(frozen=True)
class ProviderRecord:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str


@dataclass(frozen=True)
class InventorySnapshot:
    generation: int
    inventories: dict[str, InventoryRecord]


@dataclass(frozen=True)
class TraitsSnapshot:
    generation: int
    traits: frozenset[str]


class PlacementClient:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http

    @classmethod
    def connect(cls, api_url: str, token: str | None, timeout: float, **http_options: Any) -> Self:
        headers = {"OpenStack-API-Version": MICROVERSION, "Accept": "application/json"}
        if token:
            headers["X-Auth-Token"] = token
        return cls(
            httpx.AsyncClient(base_url=api_url, headers=headers, timeout=timeout, **http_options)
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def get_provider(self, uuid: str) -> ProviderRecord | None:
        try:
            body = await self._request("GET", f"/resource_providers/{uuid}")
        except NotFound:
            return None
        return _provider(body)

    async def find_provider_by_name(self, name: str) -> ProviderRecord | None:
        body = await self._request("GET", "/resource_providers", params={"name": name})
        found = body["resource_providers"]
        return _provider(found[0]) if found else None

    async def create_provider(
        self, uuid: str, name: str, parent_uuid: str | None = None
    ) -> ProviderRecord:
        payload: dict[str, Any] = {"uuid": uuid, "name": name}
        if parent_uuid is not None:
            payload["parent_provider_uuid"] = parent_uuid
        return _provider(await self._request("POST", "/resource_providers", json=payload))

    async def get_inventories(self, uuid: str) -> InventorySnapshot:
        body = await self._request("GET", f"/resource_providers/{uuid}/inventories")
        return _inventory_snapshot(body)

    async def put_inventories(
        self, uuid: str, generation: int, inventories: dict[str, InventoryRecord]
    ) -> InventorySnapshot:
        payload = {
            "resource_provider_generation": generation,
            "inventories": {rc: _record_json(record) for rc, record in inventories.items()},
        }
        body = await self._request("PUT", f"/resource_providers/{uuid}/inventories", json=payload)
        return _inventory_snapshot(body)

    async def get_traits(self, uuid: str) -> TraitsSnapshot:
        body = await self._request("GET", f"/resource_providers/{uuid}/traits")
        return TraitsSnapshot(int(body["resource_provider_generation"]), frozenset(body["traits"]))

    async def put_traits(
        self, uuid: str, generation: int, traits: frozenset[str]
    ) -> TraitsSnapshot:
        payload = {"resource_provider_generation": generation, "traits": sorted(traits)}
        body = await self._request("PUT", f"/resource_providers/{uuid}/traits", json=payload)
        return TraitsSnapshot(int(body["resource_provider_generation"]), frozenset(body["traits"]))

    async def ensure_trait(self, name: str) -> None:
        await self._request("PUT", f"/traits/{name}")

    async def ensure_resource_class(self, name: str) -> None:
        await self._request("PUT", f"/resource_classes/{name}")

    async def get_usages(self, uuid: str) -> dict[str, int]:
        body = await self._request("GET", f"/resource_providers/{uuid}/usages")
        return {rc: int(amount) for rc, amount in body["usages"].items()}

    async def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        """Consumer uuid -> resources it holds on this provider."""
        body = await self._request("GET", f"/resource_providers/{uuid}/allocations")
        return {
            consumer: {rc: int(amount) for rc, amount in held["resources"].items()}
            for consumer, held in body["allocations"].items()
        }

    async def _request(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = await self._http.request(method, path, **options)
        except httpx.HTTPError as error:
            raise PlacementUnavailable(f"{method} {path}: {error!r}") from error
        if response.status_code >= 500:
            raise PlacementUnavailable(f"{method} {path}: {response.status_code} {response.text}")
        if response.status_code >= 400:
            raise _error(response)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()


def _error(response: httpx.Response) -> PlacementError:
    code, detail, request_id = None, response.text, response.headers.get("openstack-request-id")
    try:
        first = response.json()["errors"][0]
        code, detail = first.get("code"), first.get("detail", detail)
        request_id = first.get("request_id", request_id)
    except (ValueError, KeyError, IndexError, TypeError):
        log.debug("error response without a Placement error body: %s", response.text)
    if response.status_code == 404:
        return NotFound(404, code, detail, request_id)
    kind = _ERRORS_BY_CODE.get(code or "", PlacementError)
    if kind is PlacementError and response.status_code == 409 and response.request.method == "POST":
        kind = ProviderConflict
    return kind(response.status_code, code, detail, request_id)


def _provider(body: dict[str, Any]) -> ProviderRecord:
    return ProviderRecord(
        uuid=body["uuid"],
        name=body["name"],
        generation=int(body["generation"]),
        parent_uuid=body.get("parent_provider_uuid"),
        root_uuid=body.get("root_provider_uuid") or body["uuid"],
    )


def _inventory_snapshot(body: dict[str, Any]) -> InventorySnapshot:
    return InventorySnapshot(
        generation=int(body["resource_provider_generation"]),
        inventories={
            rc: InventoryRecord(
                total=int(record["total"]),
                reserved=int(record["reserved"]),
                min_unit=int(record["min_unit"]),
                max_unit=int(record["max_unit"]),
                step_size=int(record["step_size"]),
                allocation_ratio=float(record["allocation_ratio"]),
            )
            for rc, record in body["inventories"].items()
        },
    )


def _record_json(record: InventoryRecord) -> dict[str, int | float]:
    return {
        "total": record.total,
        "reserved": record.reserved,
        "min_unit": record.min_unit,
        "max_unit": record.max_unit,
        "step_size": record.step_size,
        "allocation_ratio": record.allocation_ratio,
    }
