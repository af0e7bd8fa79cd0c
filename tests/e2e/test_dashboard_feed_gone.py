"""The dashboard behind a pruned change feed: its position is gone (410), so it
re-reads the capacity report and follows the feed again from the current index.

The dashboard follows a real API server; the writes go through the API app in
this process, on the same database, which keeps one change and prunes the rest
while the server is stopped (SIGSTOP): the server's first look after it
resumes finds the dashboard's position pruned. Nothing is timed: every wait is
for a condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import asyncpg
import httpx
import pytest
from httpx import ASGITransport

from placement_api.app import create_app
from placement_api.dashboard.flavors import parse_flavors
from placement_api.dashboard.live import LiveOptions, LiveSnapshot
from placement_api.settings import Settings
from placement_client import PlacementClient
from tests.support import databases
from tests.support.server import LiveServer, live_server

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
WITHIN = 60.0  # seconds a loaded CI machine may take to show a condition


@pytest.fixture(autouse=True)
def _emptied_afterwards(database_url: str) -> Iterator[None]:
    yield
    databases.empty(database_url)


def _poll_interval(database_url: str) -> str:
    # SQLite wakes the readers of another process only by this re-read; on
    # PostgreSQL the writes' NOTIFY wakes them.
    return "0.5" if database_url.startswith("sqlite") else "60"


async def _until(condition: Callable[[], Any], what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + WITHIN
    while not (found := await _call(condition)):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {WITHIN} s: {what}")
        await asyncio.sleep(0.05)
    return found


async def _call(condition: Callable[[], Any]) -> Any:
    found = condition()
    return await found if asyncio.iscoroutine(found) else found


async def _ok(response: httpx.Response) -> Any:
    assert response.is_success, f"{response.request.url}: {response.text}"
    return response.json() if response.content else None


async def _claim(api: httpx.AsyncClient, host: str, vcpu: int) -> None:
    body = {
        "allocations": {host: {"resources": {"VCPU": vcpu}}},
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
        "project_id": "demo",
        "user_id": "demo",
    }
    await _ok(await api.put(f"/allocations/{uuid.uuid4()}", json=body))


@contextlib.asynccontextmanager
async def _dashboard(api_url: str) -> AsyncIterator[LiveSnapshot]:
    client = PlacementClient.with_token(api_url, "admin")
    options = LiveOptions(debounce=0.05, liveness_interval=3600, retry_interval=0.2)
    live = LiveSnapshot(client, parse_flavors(["small=VCPU:1"]), options)
    running = asyncio.create_task(live.run())
    try:
        yield live
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await client.aclose()


def _vcpu(live: LiveSnapshot) -> tuple[int, int] | None:
    """(used VCPU, small instances that fit) of the dashboard's last read."""
    summary = live.snapshot.summary
    if "resource_classes" not in summary:
        return None
    return summary["resource_classes"]["VCPU"]["used"], summary["fits"]["small"]


@contextlib.asynccontextmanager
async def _stopped(server: LiveServer, database_url: str) -> AsyncIterator[None]:
    """The server stopped outside any transaction: one stopped inside the feed's
    sequencing would hold the lock the writes' sequencing and pruning wait for."""
    while True:
        os.kill(server.process.pid, signal.SIGSTOP)
        if not await _in_a_transaction(database_url):
            break
        os.kill(server.process.pid, signal.SIGCONT)
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


async def _in_a_transaction(database_url: str) -> bool:
    """Whether another session of the database is in a transaction (PostgreSQL;
    SQLite's readers block no writer, and the server writes nothing on its own)."""
    if database_url.startswith("sqlite"):
        return False
    connection = await asyncpg.connect(database_url.replace("+asyncpg", "", 1))
    try:
        busy: int = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
        )
    finally:
        await connection.close()
    return busy > 0


@contextlib.asynccontextmanager
async def _writer(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The API app, keeping one change of the feed and pruning every 0.1 s."""
    app = create_app(
        settings.model_copy(update={"changes_retained": 1, "changes_prune_interval": 0.1})
    )
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://placement", headers=HEADERS
        ) as http:
            yield http


async def _recovers(reader: LiveServer, settings: Settings) -> None:
    async with (
        _writer(settings) as api,
        httpx.AsyncClient(base_url=reader.url, headers=HEADERS, timeout=60) as via_reader,
    ):
        host = (await _ok(await api.post("/resource_providers", json={"name": "h1"})))["uuid"]
        inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}
        await _ok(await api.put(f"/resource_providers/{host}/inventories", json=inventory))
        async with _dashboard(reader.url) as live:
            await _until(lambda: _vcpu(live) == (0, 8), "the first read")
            followed = await _until(lambda: live.snapshot.feed_index, "a feed position")

            async with _stopped(reader, settings.database_url):
                await _claim(api, host, 3)
                await _claim(api, host, 2)
                # The writer keeps one change: the dashboard's next one is pruned.
                await _until(lambda: _gone(api, followed), f"the changes after {followed} pruned")
            await _until(lambda: _vcpu(live) == (5, 3), "the numbers after the 410")
            head = (await _ok(await api.get("/changes")))["index"]
            assert live.snapshot.feed_index == head
            # The pruned changes were never seen: the snapshot was re-read instead.
            assert live.snapshot.summary["changes"] == []

            # Following resumes from the index the 410 gave.
            await _claim(via_reader, host, 1)
            await _until(lambda: _vcpu(live) == (6, 2), "a claim made after the 410")
            shown = live.snapshot.summary["changes"]
            assert [(c["resource"], c["action"]) for c in shown] == [("allocation", "created")]


async def _gone(api: httpx.AsyncClient, since: int) -> bool:
    response = await api.get("/changes", params={"since": since})
    return response.status_code == 410


def test_the_dashboard_re_reads_when_its_feed_position_was_pruned(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="placement_api.dashboard.live")
    with live_server(
        settings.database_url,
        PLACEMENT_CHANGES_POLL_INTERVAL=_poll_interval(settings.database_url),
        # It writes nothing on its own, so stopping it never stops a write.
        PLACEMENT_CHANGES_PRUNE_INTERVAL="3600",
    ) as reader:
        asyncio.run(_recovers(reader, settings))
    # A 410 is the feed's answer, not a failure: nothing was logged as one.
    assert [
        r.getMessage() for r in caplog.records if r.name == "placement_api.dashboard.live"
    ] == []
