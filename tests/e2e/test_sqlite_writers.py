"""SQLite served by two worker processes: concurrent writers queue for the
database's one write lock instead of failing, and one that cannot have it in
time gets a 503, never a 500."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections import Counter
from pathlib import Path

import httpx

from tests.support.server import live_server

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}
WRITERS = 64
CLAIMS_EACH = 2


def _provider(client: httpx.Client) -> str:
    created = client.post("/resource_providers", json={"name": f"rp-{uuid.uuid4().hex[:8]}"})
    assert created.status_code == 200, created.text
    provider: str = created.json()["uuid"]
    inventory = client.put(
        f"/resource_providers/{provider}/inventories",
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 10**6}}},
    )
    assert inventory.status_code == 200, inventory.text
    return provider


async def _writer(client: httpx.AsyncClient, providers: list[str], index: int) -> list[int]:
    statuses = []
    for step in range(CLAIMS_EACH):
        provider = providers[(index + step) % len(providers)]
        response = await client.put(
            f"/allocations/{uuid.uuid4()}",
            json={
                "allocations": {provider: {"resources": {"VCPU": 1}}},
                "project_id": "project",
                "user_id": "user",
                "consumer_generation": None,
            },
        )
        statuses.append(response.status_code)
    return statuses


async def _write_at_once(url: str, providers: list[str]) -> Counter[int]:
    limits = httpx.Limits(max_connections=WRITERS)
    async with httpx.AsyncClient(
        base_url=url, headers=HEADERS, limits=limits, timeout=60
    ) as client:
        results = await asyncio.gather(*(_writer(client, providers, i) for i in range(WRITERS)))
    return Counter(status for statuses in results for status in statuses)


def _usage_and_allocated(client: httpx.Client, provider: str) -> tuple[int, int]:
    usages = client.get(f"/resource_providers/{provider}/usages").json()["usages"]
    allocations = client.get(f"/resource_providers/{provider}/allocations").json()["allocations"]
    allocated = sum(entry["resources"]["VCPU"] for entry in allocations.values())
    return usages.get("VCPU", 0), allocated


def test_sixty_four_writers_on_two_sqlite_workers_all_succeed(tmp_path: Path) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(f"sqlite+aiosqlite:///{database}", workers=2) as server:
        with httpx.Client(base_url=server.url, headers=HEADERS) as client:
            providers = [_provider(client) for _ in range(4)]
        statuses = asyncio.run(_write_at_once(server.url, providers))
        with httpx.Client(base_url=server.url, headers=HEADERS) as client:
            held = [_usage_and_allocated(client, provider) for provider in providers]
    assert statuses == Counter({204: WRITERS * CLAIMS_EACH})
    assert all(usage == allocated for usage, allocated in held)
    assert sum(usage for usage, _ in held) == WRITERS * CLAIMS_EACH


def test_a_write_that_cannot_have_the_lock_in_time_is_a_503(tmp_path: Path) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(
        f"sqlite+aiosqlite:///{database}", PLACEMENT_DATABASE_LOCK_TIMEOUT="0.2"
    ) as server:
        with httpx.Client(base_url=server.url, headers=HEADERS) as client:
            providers = [_provider(client)]
        # Another process holds SQLite's write lock for longer than the wait.

        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with httpx.Client(base_url=server.url, headers=HEADERS) as client:
                response = client.put(
                    f"/allocations/{uuid.uuid4()}",
                    json={
                        "allocations": {providers[0]: {"resources": {"VCPU": 1}}},
                        "project_id": "project",
                        "user_id": "user",
                        "consumer_generation": None,
                    },
                )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "2"
        with httpx.Client(base_url=server.url, headers=HEADERS) as client:
            assert _usage_and_allocated(client, providers[0]) == (0, 0)
