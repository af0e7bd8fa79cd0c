"""A real Placement server (``python -m placement_api serve``) per backend, and set-up over HTTP.

The server is started once per backend for the scheduler's integration
tests; each test empties the database afterwards. Providers, inventories,
traits and aggregates are created through the public API, as an agent or an
operator would.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from placement_api.db import migrations
from placement_client import PlacementClient
from scheduler.placement.client import SchedulerPlacement
from tests.support import databases
from tests.support.server import live_server

HEADERS = {
    "x-auth-token": "admin",
    "openstack-api-version": "placement 1.39",
    "accept": "application/json",
}


def scheduler_placement(
    url: str | None, transport: httpx.AsyncBaseTransport | None = None
) -> SchedulerPlacement:
    """The scheduler's Placement calls over the shared client, with the noauth2 admin token."""
    return SchedulerPlacement(PlacementClient.with_token(url, "admin", transport=transport))


def transport_of(placement: SchedulerPlacement) -> httpx.AsyncBaseTransport:
    found: httpx.AsyncBaseTransport = placement.client._http._transport
    return found


@dataclass(frozen=True)
class LivePlacement:
    url: str
    database_url: str
    backend: str


@contextmanager
def placement_on(backend: str) -> Iterator[LivePlacement]:
    """A fresh database of the backend, migrated, and a server on it."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="scheduler-it-") as directory:
            url = f"sqlite+aiosqlite:///{Path(directory) / 'placement.sqlite'}"
            migrations.upgrade(url)
            with live_server(url, PLACEMENT_ENFORCE_NEW_DEFAULTS="false") as server:
                yield LivePlacement(server.url, url, backend)
        return
    name, url = asyncio.run(databases.create_pg_database())
    try:
        migrations.upgrade(url)
        with live_server(url, PLACEMENT_ENFORCE_NEW_DEFAULTS="false") as server:
            yield LivePlacement(server.url, url, backend)
    finally:
        asyncio.run(databases.drop_pg_database(name))


class Cloud:
    """Builds providers in a live Placement and reads back what the scheduler wrote."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def _ok(self, method: str, path: str, expected: int, **kw: Any) -> Any:
        response = await self.http.request(method, path, headers=HEADERS, **kw)
        assert response.status_code == expected, f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    async def host(
        self,
        name: str,
        *,
        vcpu: int = 16,
        memory_mb: int = 32768,
        disk_gb: int = 500,
        traits: tuple[str, ...] = (),
        aggregates: tuple[str, ...] = (),
    ) -> str:
        provider = await self._ok("POST", "/resource_providers", 200, json={"name": name})
        rp = provider["uuid"]
        inventories = {
            "VCPU": {"total": vcpu},
            "MEMORY_MB": {"total": memory_mb},
            "DISK_GB": {"total": disk_gb},
        }
        body = {"resource_provider_generation": 0, "inventories": inventories}
        generation = (
            await self._ok("PUT", f"/resource_providers/{rp}/inventories", 200, json=body)
        )["resource_provider_generation"]
        if traits:
            body = {"resource_provider_generation": generation, "traits": list(traits)}
            generation = (
                await self._ok("PUT", f"/resource_providers/{rp}/traits", 200, json=body)
            )["resource_provider_generation"]
        if aggregates:
            body = {"resource_provider_generation": generation, "aggregates": list(aggregates)}
            await self._ok("PUT", f"/resource_providers/{rp}/aggregates", 200, json=body)
        return str(rp)

    async def child(self, name: str, parent: str, inventories: dict[str, int]) -> str:
        """A child provider (a NUMA cell) of ``parent`` with these totals."""
        created = {"name": name, "parent_provider_uuid": parent}
        rp = str((await self._ok("POST", "/resource_providers", 200, json=created))["uuid"])
        totals = {rc: {"total": total} for rc, total in inventories.items()}
        body = {"resource_provider_generation": 0, "inventories": totals}
        await self._ok("PUT", f"/resource_providers/{rp}/inventories", 200, json=body)
        return rp

    async def allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        found = await self._ok("GET", f"/allocations/{consumer}", 200)
        return {rp: entry["resources"] for rp, entry in found["allocations"].items()}

    async def usages(self, rp: str) -> dict[str, int]:
        found = await self._ok("GET", f"/resource_providers/{rp}/usages", 200)
        return dict(found["usages"])

    async def inventories(self, rp: str) -> dict[str, dict[str, Any]]:
        found = await self._ok("GET", f"/resource_providers/{rp}/inventories", 200)
        return dict(found["inventories"])

    async def allocate(
        self, consumer: str, rp: str, resources: dict[str, int], *more: tuple[str, dict[str, int]]
    ) -> None:
        """The consumer's allocations: ``resources`` of ``rp``, and of any ``more`` providers."""
        allocations = {rp: {"resources": resources}}
        allocations |= {other: {"resources": amounts} for other, amounts in more}
        body = {
            "allocations": allocations,
            "project_id": "other",
            "user_id": "other",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        await self._ok("PUT", f"/allocations/{consumer}", 204, json=body)

    async def assert_within_capacity(self, rp: str) -> None:
        """Usage never exceeds (total - reserved) * allocation_ratio."""
        usages = await self.usages(rp)
        for rc, record in (await self.inventories(rp)).items():
            capacity = (record["total"] - record["reserved"]) * record["allocation_ratio"]
            assert usages.get(rc, 0) <= capacity, f"{rp} {rc}: {usages.get(rc)} > {capacity}"


def new_uuid() -> str:
    return str(uuid.uuid4())
