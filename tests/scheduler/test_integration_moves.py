"""Moves the way Nova moves, each confirmed and each reverted, checked in the database
after every step: where each consumer's allocations are, usage equal to the
allocations, no provider over capacity, nothing left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from httpx import ASGITransport

from placement_api.settings import Settings
from scheduler.request.move import migration_uuid
from scheduler.serving.service import create_app
from scheduler.settings import SchedulerSettings
from tests.db.allocation_state import (
    _rows,
    consumers_without_allocations,
    orphan_allocations,
    usage_drift,
)
from tests.scheduler.live import HEADERS, Cloud, LivePlacement, new_uuid

SMALL = {"VCPU": 2, "MEMORY_MB": 1024}
LARGE = {"VCPU": 4, "MEMORY_MB": 2048}


@pytest.fixture
async def service(scheduler_settings: SchedulerSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(scheduler_settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
            yield http


async def held_in_database(live: LivePlacement) -> dict[str, dict[str, dict[str, int]]]:
    """consumer uuid -> provider uuid -> class -> amount, read from the tables; and the
    invariants every step keeps."""
    settings = Settings(database_url=live.database_url)
    assert await usage_drift(settings) == []
    assert await orphan_allocations(settings) == []
    assert await consumers_without_allocations(settings) == []
    over = await _rows(
        settings,
        "SELECT resource_provider_id, resource_class_id FROM inventories "
        "WHERE used > (total - reserved) * allocation_ratio",
    )
    assert over == []
    rows = await _rows(
        settings,
        "SELECT c.uuid, rp.uuid, rc.name, a.used FROM allocations a "
        "JOIN consumers c ON c.id = a.consumer_id "
        "JOIN resource_providers rp ON rp.id = a.resource_provider_id "
        "JOIN resource_classes rc ON rc.id = a.resource_class_id",
    )
    found: dict[str, dict[str, dict[str, int]]] = {}
    for consumer, provider, resource_class, used in rows:
        found.setdefault(str(consumer), {}).setdefault(str(provider), {})[str(resource_class)] = (
            int(used)
        )
    return found


async def placed(service: httpx.AsyncClient, on: str, amounts: dict[str, int]) -> str:
    consumer = new_uuid()
    body = {"resources": amounts, "consumer_uuids": [consumer], "hints": {"force_nodes": [on]}}
    response = await service.post("/v1/schedule", json=body)
    assert response.status_code == 200, response.text
    return consumer


async def post(service: httpx.AsyncClient, path: str, body: Any = None) -> dict[str, Any]:
    response = await service.post(path, json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def stop_agent(cloud: Cloud, host: str) -> None:
    """The host's agent reported once, a second ago, and promised to report every
    second: after three missed intervals it is down."""
    body = {"interval": 1}
    response = await cloud.http.put(
        f"/resource_providers/{host}/heartbeat", json=body, headers=HEADERS
    )
    assert response.status_code == 200, response.text
    await asyncio.sleep(3.5)


@pytest.mark.parametrize("kind", ["migrate", "live-migrate", "evacuate"])
async def test_a_move_is_reverted_then_made_again_and_confirmed(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient, kind: str
) -> None:
    source = await cloud.host("source", vcpu=4)
    other = await cloud.host("other", vcpu=8)
    instance = await placed(service, source, SMALL)
    if kind == "evacuate":
        await stop_agent(cloud, source)
    for finish, after in (("revert", {instance: {source: SMALL}}), ("confirm", None)):
        moved = await post(service, "/v1/move", {"consumer_uuid": instance, "kind": kind})
        migration = moved["migration_uuid"]
        assert migration == migration_uuid(instance)
        assert moved["selection"]["provider"]["uuid"] == other
        assert moved["explanation"]["placement"]["excluded"][0]["uuid"] == source
        assert await held_in_database(live_placement) == {
            instance: {other: SMALL},
            migration: {source: SMALL},
        }
        assert await cloud.usages(source) == await cloud.usages(other)  # both held
        done = await post(service, f"/v1/move/{instance}/{finish}")
        assert done["outcome"] == ("reverted" if finish == "revert" else "confirmed")
        assert await held_in_database(live_placement) == (after or {instance: {other: SMALL}})
    assert (await cloud.usages(source))["VCPU"] == 0
    assert (await cloud.usages(other))["VCPU"] == 2


async def test_a_resize_up_on_the_same_host_holds_both_until_finished(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    only = await cloud.host("only", vcpu=8)
    instance = await placed(service, only, SMALL)
    body = {"consumer_uuid": instance, "kind": "resize", "resources": LARGE}
    for finish, final in (("revert", SMALL), ("confirm", LARGE)):
        moved = await post(service, "/v1/move", body | {"allow_same_host": True})
        migration = moved["migration_uuid"]
        assert moved["selection"]["provider"]["uuid"] == only
        assert await held_in_database(live_placement) == {
            instance: {only: LARGE},
            migration: {only: SMALL},
        }
        assert (await cloud.usages(only))["VCPU"] == 6
        await post(service, f"/v1/move/{instance}/{finish}")
        assert await held_in_database(live_placement) == {instance: {only: final}}


async def test_a_resize_that_fits_nowhere_is_a_409_that_changes_nothing(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    source = await cloud.host("source", vcpu=4)
    await cloud.host("other", vcpu=2)
    instance = await placed(service, source, SMALL)
    before = await held_in_database(live_placement)
    body = {"consumer_uuid": instance, "kind": "resize", "resources": LARGE}
    refused = await service.post("/v1/move", json=body)
    assert refused.status_code == 409
    assert refused.json()["errors"][0]["code"] == "scheduler.no_valid_host"
    assert refused.json()["explanation"]["failure"] is not None
    assert await held_in_database(live_placement) == before


async def test_one_move_at_a_time_and_nothing_to_finish_without_one(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    source = await cloud.host("source", vcpu=4)
    for name in ("a", "b"):
        await cloud.host(name, vcpu=8)
    instance = await placed(service, source, SMALL)
    nothing = await service.post(f"/v1/move/{instance}/confirm")
    assert (nothing.status_code, nothing.json()["errors"][0]["code"]) == (404, "scheduler.no_move")
    await post(service, "/v1/move", {"consumer_uuid": instance, "kind": "migrate"})
    again = await service.post("/v1/move", json={"consumer_uuid": instance, "kind": "migrate"})
    assert again.status_code == 409
    assert again.json()["errors"][0]["code"] == "scheduler.move_in_progress"
    unknown = await service.post("/v1/move", json={"consumer_uuid": new_uuid(), "kind": "migrate"})
    assert unknown.status_code == 404


async def test_evacuating_a_host_whose_agent_is_up_is_refused(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    source = await cloud.host("source", vcpu=4)
    await cloud.host("other", vcpu=8)
    instance = await placed(service, source, SMALL)
    beat = await cloud.http.put(
        f"/resource_providers/{source}/heartbeat", json={"interval": 60}, headers=HEADERS
    )
    assert beat.status_code == 200
    before = await held_in_database(live_placement)
    refused = await service.post("/v1/move", json={"consumer_uuid": instance, "kind": "evacuate"})
    assert refused.status_code == 409
    assert refused.json()["errors"][0]["code"] == "scheduler.source_host_up"
    assert await held_in_database(live_placement) == before


async def test_a_move_keeps_the_anti_affinity_group_of_the_consumer(
    cloud: Cloud, live_placement: LivePlacement, service: httpx.AsyncClient
) -> None:
    # The spread strategy alone would pick b (the most room): only the group keeps it off.
    hosts = [await cloud.host(name, vcpu=vcpu) for name, vcpu in (("a", 8), ("b", 16), ("c", 4))]
    group = {"uuid": new_uuid(), "policy": "anti-affinity", "name": "web"}
    members = [new_uuid(), new_uuid()]
    for member, host in zip(members, hosts, strict=False):
        body = {
            "resources": SMALL,
            "consumer_uuids": [member],
            "hints": {"group": group, "force_nodes": [host]},
        }
        assert (await service.post("/v1/schedule", json=body)).status_code == 200
    # The move names no group: the consumer's membership is Placement's.
    moved = await post(service, "/v1/move", {"consumer_uuid": members[0], "kind": "migrate"})
    # Not its own host (the source), not the other member's: the third.
    assert moved["selection"]["provider"]["uuid"] == hosts[2]
    await post(service, f"/v1/move/{members[0]}/confirm")
    assert await held_in_database(live_placement) == {
        members[0]: {hosts[2]: SMALL},
        members[1]: {hosts[1]: SMALL},
    }


async def test_malformed_moves_are_400s(service: httpx.AsyncClient) -> None:
    consumer = new_uuid()
    for body in (
        {"consumer_uuid": consumer, "kind": "teleport"},
        {"consumer_uuid": consumer, "kind": "resize"},  # no new flavor or amounts
        {"consumer_uuid": consumer, "kind": "evacuate", "allow_same_host": True},
        {"consumer_uuid": "not-a-uuid", "kind": "migrate"},
        {"consumer_uuid": consumer, "kind": "migrate", "unknown": 1},
    ):
        response = await service.post("/v1/move", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["errors"][0]["code"] == "scheduler.invalid_request"
    assert (await service.post("/v1/move/not-a-uuid/confirm")).status_code == 400
