"""A dry run decides and explains exactly as the real request would, and writes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from httpx import ASGITransport

from placement_api.settings import Settings
from scheduler.serving.service import create_app
from scheduler.settings import SchedulerSettings
from tests.db.allocation_state import _rows
from tests.scheduler.live import Cloud, LivePlacement, new_uuid

TABLES = (
    "resource_providers",
    "inventories",
    "allocations",
    "consumers",
    "server_groups",
    "server_group_members",
    "changes",
)


@pytest.fixture
async def service(scheduler_settings: SchedulerSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(scheduler_settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
            yield http


async def snapshot(live: LivePlacement) -> dict[str, list[tuple[Any, ...]]]:
    settings = Settings(database_url=live.database_url)
    return {
        table: await _rows(settings, f"SELECT * FROM {table} ORDER BY 1, 2") for table in TABLES
    }


def decided(answer: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(s["consumer_uuid"], s["provider"], s["allocations"]) for s in answer["selections"]]


async def test_a_dry_run_writes_nothing_and_answers_what_the_real_request_does(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    for i, vcpu in enumerate((4, 8, 16, 32)):
        await cloud.host(f"host-{i}", vcpu=vcpu)
    group = {"uuid": new_uuid(), "policy": "anti-affinity", "name": "web"}
    body = {
        "resources": {"VCPU": 2, "MEMORY_MB": 1024},
        "consumer_uuids": [new_uuid() for _ in range(3)],
        "hints": {"group": group},
    }
    before = await snapshot(live_placement)
    dry = await service.post("/v1/schedule", json=body | {"dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True
    assert await snapshot(live_placement) == before

    real = await service.post("/v1/schedule", json=body)
    assert real.status_code == 200, real.text
    assert real.json()["dry_run"] is False
    planned = [
        (s["consumer_uuid"], s["provider"], s["allocations"]) for s in dry.json()["selections"]
    ]
    placed = [
        (s["consumer_uuid"], s["provider"], s["allocations"]) for s in real.json()["selections"]
    ]
    assert planned == placed
    assert len({provider["uuid"] for _, provider, _ in placed}) == 3
    assert await snapshot(live_placement) != before


async def test_a_dry_run_that_finds_nothing_explains_why_and_writes_nothing(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    await cloud.host("host-0", vcpu=4)
    before = await snapshot(live_placement)
    body = {"resources": {"VCPU": 2}, "num_instances": 3, "dry_run": True}
    refused = await service.post("/v1/schedule", json=body)
    assert refused.status_code == 409
    failure = refused.json()["explanation"]["failure"]
    assert failure["stage"] == "capacity"
    assert failure["instance_index"] == 2
    assert await snapshot(live_placement) == before
