"""Many clients following the change feed: one database read per change for
all of a worker's waiting clients, caps on long-polls and streams (503 with
Retry-After past them), and a long wait that ends with its page before the
request's deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.app import create_app
from placement_api.settings import Settings
from tests.api.changes_helpers import latest_index
from tests.support import databases
from tests.support.client import PlacementClient

WATCHERS = 40
# Only a wake-up, never the periodic re-read, may end a wait early.
SLOW_POLL = {"changes_poll_interval": 60.0}


@pytest.fixture(autouse=True)
async def _emptied_afterwards(cleaner: AsyncEngine) -> AsyncIterator[None]:
    # The apps here are made by hand: empty the shared database as ``api`` does.
    yield
    await databases.clean(cleaner)


@asynccontextmanager
async def served(settings: Settings, **changes: Any) -> AsyncIterator[tuple[PlacementClient, Any]]:
    """A client of an app made with ``changes``, and the app."""
    app = create_app(settings.model_copy(update=changes))
    async with (
        app.router.lifespan_context(app),
        AsyncClient(transport=ASGITransport(app=app), base_url="http://p") as http,
    ):
        yield PlacementClient(http), app


async def _until_waiting(app: Any, count: int) -> None:
    feed = app.state.services.change_feed
    deadline = time.monotonic() + 30
    while feed.long_polls.taken < count:
        assert time.monotonic() < deadline, f"{feed.long_polls.taken} of {count} waiting"
        await asyncio.sleep(0.02)


async def test_one_change_costs_the_same_reads_for_one_or_many_watchers(
    settings: Settings,
) -> None:
    async with served(settings, **SLOW_POLL) as (api, app):
        feed_reads: list[str] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if "FROM changes" in statement:
                feed_reads.append(statement)

        engine = app.state.engine.sync_engine
        event.listen(engine, "before_cursor_execute", count)

        async def reads_for_one_change(watchers: int) -> int:
            since = await latest_index(api)
            waits = [
                asyncio.ensure_future(api.get(f"/changes?since={since}&wait=30"))
                for _ in range(watchers)
            ]
            await _until_waiting(app, watchers)
            before = len(feed_reads)
            created = await api.create_provider()
            answers = await asyncio.gather(*waits)
            assert all(a.json()["changes"][0]["uuid"] == created["uuid"] for a in answers)
            return len(feed_reads) - before

        alone = await reads_for_one_change(1)
        crowd = await reads_for_one_change(WATCHERS)
        event.remove(engine, "before_cursor_execute", count)
    assert crowd <= alone + 2, (alone, crowd)


async def test_re_polls_after_a_change_cost_no_reads_of_their_own(
    settings: Settings, backend: str
) -> None:
    """Each answered watcher asks again at once: while the worker hears every
    commit (LISTEN), those waits are served from the tail, without a read."""
    if backend != "postgresql":
        pytest.skip("without LISTEN/NOTIFY a reader cannot know it heard of every commit")
    async with served(settings, **SLOW_POLL) as (api, app):
        feed_reads: list[str] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if "FROM changes" in statement:
                feed_reads.append(statement)

        event.listen(app.state.engine.sync_engine, "before_cursor_execute", count)
        since = await latest_index(api)
        answered: list[int] = []
        all_answered = asyncio.Event()

        async def watch() -> None:
            answer = await api.get(f"/changes?since={since}&wait=30")
            answered.append(answer.json()["index"])
            if len(answered) == WATCHERS:
                all_answered.set()
            # As a follower does: straight back with the new index.
            await api.get(f"/changes?since={answered[-1]}&wait=30")

        watching = [asyncio.ensure_future(watch()) for _ in range(WATCHERS)]
        await _until_waiting(app, WATCHERS)
        await api.create_provider()
        await asyncio.wait_for(all_answered.wait(), 30)
        reads_before = len(feed_reads)
        await _until_waiting(app, WATCHERS)
        await asyncio.sleep(0.3)  # what a re-poll's own refresh would take, many times over
        re_poll_reads = feed_reads[reads_before:]
        await api.create_provider()  # ends the re-polls
        await asyncio.gather(*watching)
    assert re_poll_reads == []


async def test_a_re_read_that_finds_nothing_new_wakes_nobody(settings: Settings) -> None:
    async with served(settings, **SLOW_POLL) as (api, app):
        feed = app.state.services.change_feed
        since = await latest_index(api)
        waiting = asyncio.ensure_future(api.get(f"/changes?since={since}&wait=30"))
        await _until_waiting(app, 1)
        woken = feed.signal.mark()
        await feed.fresh()
        assert feed.signal.mark() == woken
        created = await api.create_provider()
        assert (await waiting).json()["changes"][0]["uuid"] == created["uuid"]
        assert feed.signal.mark() > woken


async def test_long_polls_past_the_cap_get_a_503_with_retry_after(settings: Settings) -> None:
    async with served(settings, changes_max_waiters=2, **SLOW_POLL) as (api, app):
        since = await latest_index(api)
        held = [asyncio.ensure_future(api.get(f"/changes?since={since}&wait=30")) for _ in "ab"]
        await _until_waiting(app, 2)
        refused = await api.get(f"/changes?since={since}&wait=30")
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == str(settings.retry_after)
        assert "(2)" in refused.json()["errors"][0]["detail"]
        # A read that does not wait takes no slot.
        assert (await api.get(f"/changes?since={since}")).status_code == 200
        await api.create_provider()
        assert all(r.status_code == 200 for r in await asyncio.gather(*held))
        assert (await api.get(f"/changes?since={since}&wait=1")).status_code == 200


async def test_event_streams_past_the_cap_get_a_503(settings: Settings) -> None:
    async with served(settings, changes_max_streams=1, changes_max_wait=2) as (api, app):
        stream = {"accept": "text/event-stream"}
        # From the feed's head: earlier tests' changes may be pruned already.
        since = await latest_index(api)
        first = asyncio.ensure_future(api.get(f"/changes?since={since}", headers=stream))
        feed = app.state.services.change_feed
        deadline = time.monotonic() + 30
        while feed.streams.taken < 1:
            assert time.monotonic() < deadline
            assert not first.done(), first.result().text
            await asyncio.sleep(0.02)
        refused = await api.get(f"/changes?since={since}", headers=stream)
        assert refused.status_code == 503
        assert refused.headers["retry-after"]
        assert (await first).status_code == 200  # it ends by itself after changes_max_wait
        # Its slot is free again.
        assert feed.streams.taken == 0
        assert (await api.get(f"/changes?since={since}", headers=stream)).status_code == 200


async def test_a_wait_longer_than_the_request_deadline_ends_with_its_page(
    settings: Settings,
) -> None:
    async with served(settings, request_timeout=2.0) as (api, _):
        since = await latest_index(api)
        response = await api.get(f"/changes?since={since}&wait=1163")
        assert response.status_code == 200, response.text
        page = response.json()
        assert (page["index"], page["changes"]) == (since, [])
