"""Liveness and utilisation from a real Placement's ``GET /heartbeats`` (SQLite and
PostgreSQL): a host whose agent stopped is avoided once its heartbeats are
missed, and the metrics weigher prefers the idle host."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.request.spec import ScheduleRequest
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import HEADERS, Cloud

FLAVOR = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


async def heartbeat(cloud: Cloud, host: str, interval: int, **metrics: float) -> dict[str, Any]:
    body: dict[str, Any] = {"interval": interval}
    if metrics:
        body["metrics"] = {name.replace("_", "."): value for name, value in metrics.items()}
    response = await cloud.http.put(
        f"/resource_providers/{host}/heartbeat", json=body, headers=HEADERS
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def until_down(cloud: Cloud, host: str) -> None:
    """The server's own clock decides; poll its answer rather than guess a sleep."""
    for _ in range(100):
        response = await cloud.http.get("/heartbeats", headers=HEADERS)
        beats = {b["resource_provider_uuid"]: b for b in response.json()["heartbeats"]}
        if not beats[host]["alive"]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{host} never went down")


def spec() -> ScheduleRequest:
    return ScheduleRequest.model_validate({"resources": FLAVOR})


async def test_a_host_whose_agent_stopped_is_avoided_with_the_reason(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    stopped = await cloud.host("stopped", memory_mb=65536)  # spread would take it
    running = await cloud.host("running", memory_mb=8192)
    silent = await cloud.host("silent", memory_mb=4096)
    last = await heartbeat(cloud, stopped, interval=1)
    await heartbeat(cloud, running, interval=3600)
    scheduler = make_scheduler()
    assert (await scheduler.schedule(spec())).selections[0].provider.uuid == stopped
    await until_down(cloud, stopped)
    result = await scheduler.schedule(spec())
    assert result.selections[0].provider.uuid == running
    (liveness,) = [f for f in result.explanation.instances[0].filters if f.name == "liveness"]
    assert [(r.uuid, r.reason) for r in liveness.rejected] == [
        (stopped, f"agent down since {last['last_seen']}")
    ]
    assert [(n.uuid, n.note) for n in liveness.noted] == [
        (silent, "liveness unknown: no heartbeat from this host")
    ]


async def test_the_metrics_weigher_prefers_the_idle_host(
    cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    busy = await cloud.host("busy", memory_mb=65536)
    idle = await cloud.host("idle", memory_mb=8192)
    await cloud.host("unreported", memory_mb=65536)
    await heartbeat(cloud, busy, interval=3600, cpu_percent=95.0, memory_used=60000.0)
    await heartbeat(cloud, idle, interval=3600, cpu_percent=5.0, memory_used=1000.0)
    scheduler = make_scheduler(
        metrics_weight_setting={"cpu.percent": -1.0, "memory.used": -0.5},
        weigher_multipliers={"metrics": 10.0},
    )
    result = await scheduler.schedule(spec())
    assert result.selections[0].provider.uuid == idle
    ranked = [w.host for w in result.explanation.instances[0].weighed]
    assert ranked == ["idle", "busy", "unreported"]
    required = make_scheduler(
        metrics_weight_setting={"cpu.percent": -1.0}, metrics_required=True, enabled_weighers=[]
    )
    result = await required.schedule(spec())
    (metrics,) = [f for f in result.explanation.instances[0].filters if f.name == "metrics"]
    assert [r.host for r in metrics.rejected] == ["unreported"]
