"""Inventory writes under concurrency: the generation compare-and-swap holds.

Every request below is a real ASGI request with its own session and
transaction, run at the same time as the others with ``asyncio.gather``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import os_resource_classes
from sqlalchemy import text

from placement_api.db.engine import create_engine
from placement_api.settings import Settings
from tests.support.client import PlacementClient, error_code

WRITERS = 20


def _url(provider: dict[str, Any], resource_class: str | None = None) -> str:
    base = f"/resource_providers/{provider['uuid']}/inventories"
    return f"{base}/{resource_class}" if resource_class else base


async def _generation(api: PlacementClient, provider: dict[str, Any]) -> int:
    shown = await api.get(f"/resource_providers/{provider['uuid']}")
    generation: int = shown.json()["generation"]
    return generation


async def _snapshot(settings: Settings) -> list[tuple[Any, ...]]:
    """Every inventory row and provider generation, as stored."""
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as connection:
            inventories = await connection.execute(
                text(
                    "SELECT resource_provider_id, resource_class_id, total, reserved, min_unit, "
                    "max_unit, step_size, allocation_ratio, used, updated_at FROM inventories "
                    "ORDER BY resource_provider_id, resource_class_id"
                )
            )
            providers = await connection.execute(
                text("SELECT id, generation, updated_at FROM resource_providers ORDER BY id")
            )
            return [tuple(row) for row in inventories] + [tuple(row) for row in providers]
    finally:
        await engine.dispose()


async def test_same_generation_writers_exactly_one_wins(api: PlacementClient) -> None:
    provider = await api.create_provider()
    initial = await api.set_inventory(provider, {"VCPU": {"total": 1}})

    async def put_total(total: int) -> Any:
        return await api.put(
            _url(provider),
            json={
                "resource_provider_generation": initial,
                "inventories": {"VCPU": {"total": total}},
            },
        )

    responses = await asyncio.gather(*(put_total(total) for total in range(2, WRITERS + 2)))
    winners = [r for r in responses if r.status_code == 200]
    losers = [r for r in responses if r.status_code != 200]
    assert len(winners) == 1
    assert all(r.status_code == 409 for r in losers)
    assert all(error_code(r) == "placement.concurrent_update" for r in losers)
    assert await _generation(api, provider) == initial + len(winners)
    stored = (await api.get(_url(provider))).json()["inventories"]["VCPU"]["total"]
    assert stored == winners[0].json()["inventories"]["VCPU"]["total"]


async def test_writers_without_a_generation_are_serialised(api: PlacementClient) -> None:
    provider = await api.create_provider()
    classes = os_resource_classes.STANDARDS[:WRITERS]
    responses = await asyncio.gather(
        *(api.post(_url(provider), json={"resource_class": rc, "total": 4}) for rc in classes)
    )
    assert [r.status_code for r in responses] == [201] * len(classes)
    generations = sorted(r.json()["resource_provider_generation"] for r in responses)
    assert generations == list(range(1, len(classes) + 1))
    assert await _generation(api, provider) == len(classes)


async def test_retrying_writers_lose_no_update(api: PlacementClient) -> None:
    """Read-modify-write with retry on 409: every writer's class survives."""
    provider = await api.create_provider()
    classes = os_resource_classes.STANDARDS[:WRITERS]
    successes = 0

    async def add_class(resource_class: str) -> None:
        nonlocal successes
        for _ in range(WRITERS * 3):
            current = (await api.get(_url(provider))).json()
            wanted = {**current["inventories"], resource_class: {"total": 2}}
            response = await api.put(
                _url(provider),
                json={
                    "resource_provider_generation": current["resource_provider_generation"],
                    "inventories": wanted,
                },
            )
            if response.status_code == 200:
                successes += 1
                return
            assert error_code(response) == "placement.concurrent_update"
        raise AssertionError(f"{resource_class} never got through")

    await asyncio.gather(*(add_class(rc) for rc in classes))
    final = (await api.get(_url(provider))).json()
    assert set(final["inventories"]) == set(classes)
    assert final["resource_provider_generation"] == successes == len(classes)


async def test_refused_writes_leave_the_database_unchanged(
    api: PlacementClient, settings: Settings
) -> None:
    provider = await api.create_provider()
    generation = await api.set_inventory(provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 50}})
    before = await _snapshot(settings)

    refused = [
        # stale generation
        await api.put(
            _url(provider),
            json={"resource_provider_generation": generation - 1, "inventories": {}},
        ),
        # unknown class, after the generation was accepted
        await api.put(
            _url(provider),
            json={
                "resource_provider_generation": generation,
                "inventories": {"VCPU": {"total": 4}, "CUSTOM_MISSING": {"total": 1}},
            },
        ),
        # reserved above total
        await api.put(
            _url(provider, "VCPU"),
            json={"resource_provider_generation": generation, "total": 4, "reserved": 9},
        ),
        await api.post(_url(provider), json={"resource_class": "DISK_GB", "total": 1}),
        await api.post(_url(provider), json={"resource_class": "MEMORY_MB", "total": 0}),
        await api.delete(_url(provider, "MEMORY_MB")),
        await api.delete(_url(provider), version="1.4"),
    ]
    assert [r.status_code for r in refused] == [409, 400, 400, 409, 400, 404, 405]
    assert await _snapshot(settings) == before
