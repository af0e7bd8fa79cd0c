"""The change feed of served processes: many writers through two workers, one
follower that must see every change exactly once and in order; and a reader
woken by a write made through another server process."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support import databases
from tests.support.server import live_server

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
WRITERS = 8
ROUNDS = 6


@pytest.fixture(autouse=True)
def _emptied_afterwards(database_url: str) -> Iterator[None]:
    # The session's database is shared with later tests on this worker.
    yield
    databases.empty(database_url)


def _poll_interval(database_url: str) -> str:
    # PostgreSQL wakes readers by NOTIFY, so its periodic re-read is kept out of the
    # way; SQLite wakes the readers of other processes only by that re-read.
    return "1" if database_url.startswith("sqlite") else "60"


async def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.is_success, response.text
    return response.json() if response.content else {}


async def _writer(http: httpx.AsyncClient, shared: str) -> list[tuple[str, str, str]]:
    """Provider, inventory and allocation writes; the changes each should record."""
    expected = []
    for _ in range(ROUNDS):
        provider = await _ok(
            await http.post("/resource_providers", json={"name": uuid.uuid4().hex})
        )
        inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}
        await _ok(
            await http.put(f"/resource_providers/{provider['uuid']}/inventories", json=inventory)
        )
        consumer = str(uuid.uuid4())
        claim = {
            "allocations": {
                provider["uuid"]: {"resources": {"VCPU": 1}},
                shared: {"resources": {"VCPU": 1}},
            },
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        await _ok(await http.put(f"/allocations/{consumer}", json=claim))
        expected += [
            ("resource_provider", "created", provider["uuid"]),
            ("inventory", "updated", provider["uuid"]),
            ("allocation", "created", consumer),
        ]
    return expected


async def _follow(http: httpx.AsyncClient, since: int) -> list[dict[str, Any]]:
    """Follow the feed with waits, up to the provider named ``last``."""
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1].get("name") != "last":
        body = await _ok(await http.get(f"/changes?since={since}&wait=10&limit=7"))
        indexes = [change["index"] for change in body["changes"]]
        assert indexes == list(range(since + 1, since + 1 + len(indexes)))
        seen += body["changes"]
        since = indexes[-1] if indexes else body["index"]
    return seen


async def _run_writers_and_follower(url: str) -> tuple[int, list[Any], list[dict[str, Any]]]:
    limits = httpx.Limits(max_connections=WRITERS + 2)
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60, limits=limits) as http:
        shared = await _ok(await http.post("/resource_providers", json={"name": "shared"}))
        inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1000}}}
        await _ok(
            await http.put(f"/resource_providers/{shared['uuid']}/inventories", json=inventory)
        )
        start = (await _ok(await http.get("/changes")))["index"]
        follower = asyncio.create_task(_follow(http, start))
        written = await asyncio.gather(*(_writer(http, shared["uuid"]) for _ in range(WRITERS)))
        # Written after all the others: the follower stops once it has seen it.
        last = await _ok(await http.post("/resource_providers", json={"name": "last"}))
        seen = await asyncio.wait_for(follower, 120)
    expected = [entry for batch in written for entry in batch]
    return start, [*expected, ("resource_provider", "created", last["uuid"])], seen


def test_a_follower_sees_every_change_of_concurrent_writers_once_and_in_order(
    database_url: str,
) -> None:
    poll = _poll_interval(database_url)
    with live_server(database_url, workers=2, PLACEMENT_CHANGES_POLL_INTERVAL=poll) as server:
        start, expected, seen = asyncio.run(_run_writers_and_follower(server.url))
    assert [change["index"] for change in seen] == list(range(start + 1, start + 1 + len(seen)))
    recorded = Counter((c["resource"], c["action"], c["uuid"]) for c in seen)
    assert recorded == Counter(expected)
    assert len(seen) == WRITERS * ROUNDS * 3 + 1


async def _wait_and_write(reader_url: str, writer_url: str) -> tuple[float, dict[str, Any]]:
    async with (
        httpx.AsyncClient(base_url=reader_url, headers=HEADERS, timeout=60) as reader,
        httpx.AsyncClient(base_url=writer_url, headers=HEADERS, timeout=60) as writer,
    ):
        since = (await _ok(await reader.get("/changes")))["index"]
        began = time.monotonic()
        waiting = asyncio.create_task(reader.get(f"/changes?since={since}&wait=40"))
        await asyncio.sleep(1)
        assert not waiting.done()
        await _ok(await writer.post("/resource_providers", json={"name": uuid.uuid4().hex}))
        body = await _ok(await waiting)
        return time.monotonic() - began, body


def test_a_reader_wakes_for_a_write_made_through_another_server(database_url: str) -> None:
    poll = _poll_interval(database_url)
    with (
        live_server(database_url, PLACEMENT_CHANGES_POLL_INTERVAL=poll) as reader,
        live_server(database_url, PLACEMENT_CHANGES_POLL_INTERVAL=poll) as writer,
    ):
        took, body = asyncio.run(_wait_and_write(reader.url, writer.url))
    assert [change["resource"] for change in body["changes"]] == ["resource_provider"]
    assert took < 20, "the waiting reader was not woken by the other server's write"
