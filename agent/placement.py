"""The Placement calls the agent makes, typed, over the shared ``placement_client``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.inventory import InventoryRecord
from placement_client import MicroversionUnsupported, NotFound, PlacementClient, Version

# POST /reshaper exists from 1.30. It is sent at 1.37 at most: from 1.38 every
# consumer must name a type, and a consumer moved here should keep its own.
RESHAPER = Version(1, 30)
RESHAPE_AT_MOST = Version(1, 37)


@dataclass(frozen=True)
class ProviderRecord:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str


@dataclass(frozen=True)
class ConsumerRecord:
    """One consumer's whole allocation set (every provider), as GET /allocations shows it."""

    uuid: str
    generation: int | None
    project_id: str
    user_id: str
    allocations: dict[str, dict[str, int]]


@dataclass(frozen=True)
class InventorySnapshot:
    generation: int
    inventories: dict[str, InventoryRecord]


@dataclass(frozen=True)
class AllocationsSnapshot:
    generation: int
    # Consumer uuid -> resources it holds on the provider.
    allocations: dict[str, dict[str, int]]


@dataclass(frozen=True)
class TraitsSnapshot:
    generation: int
    traits: frozenset[str]


class AgentPlacement:
    def __init__(self, client: PlacementClient) -> None:
        self._client = client

    async def get_provider(self, uuid: str) -> ProviderRecord | None:
        try:
            body = await self._client.get(f"/resource_providers/{uuid}")
        except NotFound:
            return None
        return _provider(body)

    async def find_provider_by_name(self, name: str) -> ProviderRecord | None:
        body = await self._client.get("/resource_providers", params={"name": name})
        found = body["resource_providers"]
        return _provider(found[0]) if found else None

    async def create_provider(
        self, uuid: str, name: str, parent_uuid: str | None = None
    ) -> ProviderRecord:
        payload: dict[str, Any] = {"uuid": uuid, "name": name}
        if parent_uuid is not None:
            payload["parent_provider_uuid"] = parent_uuid
        return _provider(await self._client.post("/resource_providers", payload))

    async def list_tree(self, root_uuid: str) -> list[ProviderRecord]:
        body = await self._client.get("/resource_providers", params={"in_tree": root_uuid})
        return [_provider(found) for found in body["resource_providers"]]

    async def rename_provider(
        self, uuid: str, name: str, parent_uuid: str | None
    ) -> ProviderRecord:
        """The parent is always sent: from 1.37 leaving it out would un-parent a child."""
        payload = {"name": name, "parent_provider_uuid": parent_uuid}
        return _provider(await self._client.put(f"/resource_providers/{uuid}", payload))

    async def delete_provider(self, uuid: str) -> None:
        await self._client.delete(f"/resource_providers/{uuid}")

    async def get_inventories(self, uuid: str) -> InventorySnapshot:
        body = await self._client.get(f"/resource_providers/{uuid}/inventories")
        return _inventory_snapshot(body)

    async def put_inventories(
        self, uuid: str, generation: int, inventories: dict[str, InventoryRecord]
    ) -> InventorySnapshot:
        payload = {
            "resource_provider_generation": generation,
            "inventories": {rc: _record_json(record) for rc, record in inventories.items()},
        }
        body = await self._client.put(f"/resource_providers/{uuid}/inventories", payload)
        return _inventory_snapshot(body)

    async def get_traits(self, uuid: str) -> TraitsSnapshot:
        body = await self._client.get(f"/resource_providers/{uuid}/traits")
        return TraitsSnapshot(int(body["resource_provider_generation"]), frozenset(body["traits"]))

    async def put_traits(
        self, uuid: str, generation: int, traits: frozenset[str]
    ) -> TraitsSnapshot:
        payload = {"resource_provider_generation": generation, "traits": sorted(traits)}
        body = await self._client.put(f"/resource_providers/{uuid}/traits", payload)
        return TraitsSnapshot(int(body["resource_provider_generation"]), frozenset(body["traits"]))

    async def ensure_trait(self, name: str) -> None:
        await self._client.put(f"/traits/{name}")

    async def ensure_resource_class(self, name: str) -> None:
        await self._client.put(f"/resource_classes/{name}")

    async def put_heartbeat(self, uuid: str, interval: int, metrics: dict[str, float]) -> None:
        await self._client.put(
            f"/resource_providers/{uuid}/heartbeat", {"interval": interval, "metrics": metrics}
        )

    async def get_usages(self, uuid: str) -> dict[str, int]:
        body = await self._client.get(f"/resource_providers/{uuid}/usages")
        return {rc: int(amount) for rc, amount in body["usages"].items()}

    async def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        """Consumer uuid -> resources it holds on this provider."""
        return (await self.get_allocations_snapshot(uuid)).allocations

    async def get_allocations_snapshot(self, uuid: str) -> AllocationsSnapshot:
        body = await self._client.get(f"/resource_providers/{uuid}/allocations")
        return AllocationsSnapshot(
            generation=int(body["resource_provider_generation"]),
            allocations={
                consumer: {rc: int(amount) for rc, amount in held["resources"].items()}
                for consumer, held in body["allocations"].items()
            },
        )

    async def get_consumer(self, consumer_uuid: str) -> ConsumerRecord:
        body = await self._client.get(f"/allocations/{consumer_uuid}")
        return ConsumerRecord(
            uuid=consumer_uuid,
            generation=body.get("consumer_generation"),
            project_id=body["project_id"],
            user_id=body["user_id"],
            allocations={
                provider: {rc: int(amount) for rc, amount in held["resources"].items()}
                for provider, held in body["allocations"].items()
            },
        )

    async def create_consumer(self, consumer: ConsumerRecord, consumer_type: str) -> None:
        """A new consumer's allocations: refused (409) if it exists by now."""
        payload = _consumer_json(consumer) | {"consumer_type": consumer_type}
        await self._client.put(f"/allocations/{consumer.uuid}", payload)

    async def replace_consumer(self, consumer: ConsumerRecord) -> None:
        """The consumer's whole allocation set (none: it is removed), if its generation is
        still the one read. Sent at 1.37 so the consumer keeps its type."""
        path = f"/allocations/{consumer.uuid}"
        body = _consumer_json(consumer)
        await self._client.request("PUT", path, json=body, microversion=RESHAPE_AT_MOST)

    async def reshape(
        self,
        inventories: dict[str, tuple[int, dict[str, InventoryRecord]]],
        consumers: list[ConsumerRecord],
    ) -> None:
        """One POST /reshaper: new inventories (by provider: the generation seen and the
        whole inventory) and the whole new allocations of every consumer moved."""
        if self._client.microversion < RESHAPER:
            detail = f"moving allocations needs microversion {RESHAPER}"
            raise MicroversionUnsupported("POST", "/reshaper", None, detail)
        payload = {
            "inventories": {
                uuid: {
                    "resource_provider_generation": generation,
                    "inventories": {rc: _record_json(r) for rc, r in records.items()},
                }
                for uuid, (generation, records) in inventories.items()
            },
            "allocations": {consumer.uuid: _consumer_json(consumer) for consumer in consumers},
        }
        await self._client.post("/reshaper", payload, microversion=RESHAPE_AT_MOST)


def _consumer_json(consumer: ConsumerRecord) -> dict[str, Any]:
    return {
        "allocations": {
            provider: {"resources": resources}
            for provider, resources in consumer.allocations.items()
            if resources
        },
        "project_id": consumer.project_id,
        "user_id": consumer.user_id,
        "consumer_generation": consumer.generation,
    }


def children_first(
    listed: Mapping[str, ProviderRecord], only: Iterable[str] | None = None
) -> list[ProviderRecord]:
    """Providers of one tree (``listed``: all of it, by uuid), deepest first then by
    name: an order in which each can be deleted. ``only`` restricts the answer."""

    def depth(provider: ProviderRecord) -> int:
        levels, parent = 0, provider.parent_uuid
        while parent is not None and parent in listed:
            levels, parent = levels + 1, listed[parent].parent_uuid
        return levels

    chosen = [listed[uuid] for uuid in only] if only is not None else list(listed.values())
    return sorted(chosen, key=lambda p: (-depth(p), p.name))


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
