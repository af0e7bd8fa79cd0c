"""Host heartbeats: the contract's shapes, the liveness rule, hostile bodies,
policy, roots only, and the heartbeat going with its provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from placement_api.db.engine import create_engine
from placement_api.db.models import ProviderHeartbeat, ResourceProvider
from tests.api.changes_helpers import latest_index
from tests.support.client import AppClients, PlacementClient
from tests.support.snapshot import database_snapshot

METRICS = {"cpu.percent": 12.5, "memory.used": 2048, "memory.total": 8192, "memory.percent": 25}


def parse(moment: str) -> datetime:
    assert moment.endswith("Z"), moment
    return datetime.fromisoformat(moment)


async def beat(api: PlacementClient, uuid: str, **body: Any) -> dict[str, Any]:
    response = await api.put(f"/resource_providers/{uuid}/heartbeat", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def listed(api: PlacementClient, query: str = "") -> dict[str, Any]:
    response = await api.get(f"/heartbeats{query}")
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def seen_ago(database_url: str, uuid: str, seconds: float) -> None:
    """Move a heartbeat into the past, as if the host had gone silent that long ago."""
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            provider_id = (
                select(ResourceProvider.id).where(ResourceProvider.uuid == uuid).scalar_subquery()
            )
            await connection.execute(
                update(ProviderHeartbeat)
                .where(ProviderHeartbeat.resource_provider_id == provider_id)
                .values(last_seen=datetime.now(UTC) - timedelta(seconds=seconds))
            )
    finally:
        await engine.dispose()


async def test_a_heartbeat_answers_with_its_down_after_and_metrics(api: PlacementClient) -> None:
    host = await api.create_provider("compute-1")

    answer = await beat(api, host["uuid"], interval=60, metrics=METRICS)

    assert set(answer) == {
        "resource_provider_uuid",
        "last_seen",
        "interval",
        "down_after",
        "metrics",
        "metrics_at",
    }
    assert answer["resource_provider_uuid"] == host["uuid"]
    assert answer["interval"] == 60
    assert answer["metrics"] == METRICS
    assert answer["metrics_at"] == answer["last_seen"]
    last_seen = parse(answer["last_seen"])
    assert abs(last_seen - datetime.now(UTC)) < timedelta(seconds=30)
    assert parse(answer["down_after"]) - last_seen == timedelta(seconds=180)


async def test_a_heartbeat_without_metrics_keeps_the_last_ones_and_their_time(
    api: PlacementClient,
) -> None:
    host = await api.create_provider()
    first = await beat(api, host["uuid"], interval=60, metrics=METRICS)
    second = await beat(api, host["uuid"], interval=30)
    replaced = await beat(api, host["uuid"], interval=30, metrics={"cpu.percent": 1})

    assert second["interval"] == 30
    assert parse(second["last_seen"]) >= parse(first["last_seen"])
    assert (second["metrics"], second["metrics_at"]) == (METRICS, first["metrics_at"])
    assert replaced["metrics"] == {"cpu.percent": 1}
    assert replaced["metrics_at"] == replaced["last_seen"]


async def test_the_list_shows_senders_only_with_their_names_and_liveness(
    api: PlacementClient,
) -> None:
    host = await api.create_provider("compute-2")
    await api.create_provider("never-reported")
    sent = await beat(api, host["uuid"], interval=60, metrics=METRICS)

    body = await listed(api)

    assert set(body) == {"now", "heartbeats"}
    assert parse(body["now"]) >= parse(sent["last_seen"])
    assert body["heartbeats"] == [{**sent, "name": "compute-2", "alive": True}]


async def test_a_host_is_down_once_missed_intervals_times_its_interval_passed(
    api: PlacementClient, database_url: str
) -> None:
    quiet, fresh = await api.create_provider(), await api.create_provider()
    await beat(api, quiet["uuid"], interval=60)
    await beat(api, fresh["uuid"], interval=60)

    await seen_ago(database_url, quiet["uuid"], 179)
    assert [b["alive"] for b in (await listed(api))["heartbeats"]] == [True, True]

    await seen_ago(database_url, quiet["uuid"], 181)
    body = await listed(api)
    assert [b["alive"] for b in body["heartbeats"]] == [False, True]
    down = body["heartbeats"][0]
    assert parse(down["down_after"]) < parse(body["now"])
    only_down = (await listed(api, "?alive=false"))["heartbeats"]
    only_alive = (await listed(api, "?alive=true"))["heartbeats"]
    assert [b["resource_provider_uuid"] for b in only_down] == [quiet["uuid"]]
    assert [b["resource_provider_uuid"] for b in only_alive] == [fresh["uuid"]]


@pytest.fixture
async def one_miss_api(apps: AppClients) -> AsyncIterator[PlacementClient]:
    """An admin client of an app that declares a host down after one missed interval."""
    async with apps(heartbeat_missed_intervals=1) as client:
        yield client


async def test_the_missed_intervals_setting_moves_down_after(
    api: PlacementClient, one_miss_api: PlacementClient, database_url: str
) -> None:
    host = await api.create_provider()
    answer = await beat(one_miss_api, host["uuid"], interval=60)
    assert parse(answer["down_after"]) - parse(answer["last_seen"]) == timedelta(seconds=60)

    await seen_ago(database_url, host["uuid"], 61)

    assert [b["alive"] for b in (await listed(one_miss_api))["heartbeats"]] == [False]
    assert [b["alive"] for b in (await listed(api))["heartbeats"]] == [True]


async def test_in_tree_gives_the_heartbeat_of_the_trees_root(api: PlacementClient) -> None:
    host, other = await api.create_provider(), await api.create_provider()
    child = await api.create_provider(parent_provider_uuid=host["uuid"])
    await beat(api, host["uuid"], interval=60)
    await beat(api, other["uuid"], interval=60)

    found = (await listed(api, f"?in_tree={child['uuid']}"))["heartbeats"]

    assert [b["resource_provider_uuid"] for b in found] == [host["uuid"]]


async def test_a_child_provider_cannot_send_a_heartbeat_and_an_unknown_one_is_404(
    api: PlacementClient,
) -> None:
    host = await api.create_provider()
    child = await api.create_provider(parent_provider_uuid=host["uuid"])
    path = f"/resource_providers/{child['uuid']}/heartbeat"

    refused = await api.put(path, json={"interval": 60})
    unknown = await api.put(
        "/resource_providers/5a8e1c4e-0b0e-4c3a-9a41-2f1f0f6f6c99/heartbeat", json={"interval": 60}
    )

    assert refused.status_code == 400
    assert "not a root provider" in refused.json()["errors"][0]["detail"]
    assert unknown.status_code == 404
    assert (await listed(api))["heartbeats"] == []


async def test_heartbeats_move_no_generation_and_are_not_in_the_change_feed(
    api: PlacementClient,
) -> None:
    host = await api.create_provider()
    index = await latest_index(api)

    await beat(api, host["uuid"], interval=60, metrics=METRICS)
    await beat(api, host["uuid"], interval=60)

    shown = (await api.get(f"/resource_providers/{host['uuid']}")).json()
    assert shown["generation"] == host["generation"]
    assert await latest_index(api) == index


async def test_deleting_a_provider_deletes_its_heartbeat(
    api: PlacementClient, database_url: str
) -> None:
    host, kept = await api.create_provider(), await api.create_provider()
    await beat(api, host["uuid"], interval=60)
    await beat(api, kept["uuid"], interval=60)

    assert (await api.delete(f"/resource_providers/{host['uuid']}")).status_code == 204

    found = (await listed(api))["heartbeats"]
    assert [b["resource_provider_uuid"] for b in found] == [kept["uuid"]]
    rows = (await database_snapshot(database_url))["provider_heartbeats"]
    assert len(rows) == 1


TOO_LONG_NAME = "m" * 65


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({}, "'interval' is a required property"),
        ({"interval": 0}, "interval"),
        ({"interval": 86_401}, "interval"),
        ({"interval": "60"}, "interval"),
        ({"interval": 60, "metrics": []}, "metrics"),
        ({"interval": 60, "metrics": {"cpu.percent": "high"}}, "high"),
        ({"interval": 60, "metrics": {"cpu.percent": True}}, "True"),
        ({"interval": 60, "metrics": {"cpu.percent": None}}, "None"),
        ({"interval": 60, "metrics": {"cpu percent!": 1}}, "cpu percent!"),
        ({"interval": 60, "metrics": {f"m{i}": 1 for i in range(65)}}, "at most 64"),
        ({"interval": 60, "metrics": {TOO_LONG_NAME: 1}}, "longer than 64"),
        ({"interval": 60, "metrics": {"big": 1e300}}, "within"),
        ({"interval": 60, "metrics": {"big": -(2.0**54)}}, "within"),
        ({"interval": 60, "uptime": 5}, "uptime"),
    ],
)
async def test_hostile_heartbeats_are_refused_and_change_nothing(
    api: PlacementClient, database_url: str, body: dict[str, Any], detail: str
) -> None:
    host = await api.create_provider()
    await beat(api, host["uuid"], interval=60, metrics=METRICS)
    before = await database_snapshot(database_url)

    response = await api.put(f"/resource_providers/{host['uuid']}/heartbeat", json=body)

    assert response.status_code == 400, response.text
    assert detail in response.json()["errors"][0]["detail"]
    assert await database_snapshot(database_url) == before


@pytest.mark.parametrize("query", ["alive=maybe", "in_tree=not-a-uuid", "since=3"])
async def test_bad_list_queries_are_refused(api: PlacementClient, query: str) -> None:
    response = await api.get(f"/heartbeats?{query}")
    assert response.status_code == 400, response.text


async def test_only_admins_and_services_send_and_list_heartbeats(api: PlacementClient) -> None:
    host = await api.create_provider()
    path = f"/resource_providers/{host['uuid']}/heartbeat"
    member = {"x-auth-token": "alice:demo", "x-roles": "member,reader"}
    service = {"x-auth-token": "nova:service", "x-roles": "service"}

    assert (await api.put(path, json={"interval": 60}, headers=member)).status_code == 403
    assert (await api.get("/heartbeats", headers=member)).status_code == 403
    assert (await listed(api))["heartbeats"] == []
    assert (await api.put(path, json={"interval": 60}, headers=service)).status_code == 200
    assert (await api.get("/heartbeats", headers=service)).status_code == 200
