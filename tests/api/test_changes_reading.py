"""GET /changes: paging, waiting, 410 and resuming, validation, policy, atomicity."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import or_, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.app import create_app
from placement_api.db.engine import create_engine
from placement_api.db.models import Change, ResourceProvider
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import feed_index, providers
from placement_api.domain.changes import recording_session_factory
from placement_api.settings import Settings
from tests.api.changes_helpers import changes_after, latest_index
from tests.support import databases
from tests.support.client import AppClients, PlacementClient, error_code

# Long enough that only a wake-up, never the periodic re-read, can end a wait early.
SLOW_POLL = {"changes_poll_interval": 60.0, "changes_max_wait": 60}


@pytest.fixture
async def feed_api(apps: AppClients) -> AsyncIterator[PlacementClient]:
    """An admin client of an app that re-reads the feed only once a minute while waiting."""
    async with apps(**SLOW_POLL) as client:
        yield client


async def test_without_since_only_the_latest_index_is_given(api: PlacementClient) -> None:
    await api.create_provider()
    response = await api.get("/changes")
    assert response.status_code == 200
    body = response.json()
    assert body == {"index": await latest_index(api), "changes": [], "epoch": body["epoch"]}
    # One history on a database that never failed over: every page names the same epoch.
    assert body["epoch"]
    assert (await api.get("/changes")).json()["epoch"] == body["epoch"]


async def test_limit_pages_through_the_feed_in_order(api: PlacementClient) -> None:
    start = await latest_index(api)
    created = [(await api.create_provider())["uuid"] for _ in range(5)]
    first = (await api.get(f"/changes?since={start}&limit=2")).json()
    assert first["index"] == start + 5
    assert [c["index"] for c in first["changes"]] == [start + 1, start + 2]
    rest = (await api.get(f"/changes?since={start + 2}&limit=10")).json()
    assert [c["uuid"] for c in first["changes"] + rest["changes"]] == created
    assert [c["index"] for c in rest["changes"]] == [start + 3, start + 4, start + 5]


async def test_the_feed_is_served_at_every_microversion(api: PlacementClient) -> None:
    for version in ("1.0", "1.39"):
        response = await api.get("/changes", version=version)
        assert response.status_code == 200, version


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("since=-1", "-1"),
        ("since=abc", "abc"),
        ("since=99999999999999999999", "99999999999999999999"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("wait=3601", "wait"),
        ("wait=1.5", "1.5"),
        ("until=3", "until"),
    ],
)
async def test_bad_query_values_are_refused(api: PlacementClient, query: str, names: str) -> None:
    response = await api.get(f"/changes?{query}")
    assert response.status_code == 400, response.text
    assert names in response.json()["errors"][0]["detail"]


async def test_only_admins_and_services_may_follow_the_feed(api: PlacementClient) -> None:
    reader = await api.get("/changes", headers={"x-auth-token": "alice", "x-roles": "reader"})
    assert reader.status_code == 403
    service = await api.get("/changes", headers={"x-auth-token": "nova", "x-roles": "service"})
    assert service.status_code == 200


async def test_pruned_changes_are_gone_and_the_client_resumes_from_the_index_given(
    api: PlacementClient, settings: Settings
) -> None:
    start = await latest_index(api)
    for _ in range(6):
        await api.create_provider()
    engine = create_engine(settings.database_url)
    try:
        async with unit_of_work(recording_session_factory(engine), write=True) as session:
            assert await feed_index.prune(session, keep=3) >= 3
    finally:
        await engine.dispose()
    response = await api.get(f"/changes?since={start}")
    assert response.status_code == 410
    assert error_code(response) == "placement.changes.gone"
    resume_from = response.json()["errors"][0]["index"]
    assert resume_from == start + 6
    assert (await api.get(f"/changes?since={start + 2}")).status_code == 410
    assert len(await changes_after(api, start + 3)) == 3
    # After its re-read, the client follows on from the index the 410 gave.
    later = await api.create_provider()
    assert [c["uuid"] for c in await changes_after(api, resume_from)] == [later["uuid"]]


async def test_an_index_beyond_the_feed_is_gone(api: PlacementClient) -> None:
    response = await api.get(f"/changes?since={await latest_index(api) + 1}")
    assert response.status_code == 410
    assert error_code(response) == "placement.changes.gone"


async def test_the_pruning_task_keeps_the_newest_changes(settings: Settings) -> None:
    quick = settings.model_copy(update={"changes_retained": 2, "changes_prune_interval": 0.05})
    app = create_app(quick)
    transport = ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        AsyncClient(transport=transport, base_url="http://p") as http,
    ):
        api = PlacementClient(http)
        start = await latest_index(api)
        for _ in range(4):
            await api.create_provider()
        deadline = time.monotonic() + 30
        while (await api.get(f"/changes?since={start + 1}")).status_code != 410:
            assert time.monotonic() < deadline, "the feed was never pruned"
            await asyncio.sleep(0.05)
        assert len(await changes_after(api, start + 2)) == 2


async def test_a_waiting_reader_wakes_when_a_change_commits(feed_api: PlacementClient) -> None:
    since = await latest_index(feed_api)
    began = time.monotonic()
    waiting = asyncio.create_task(feed_api.get(f"/changes?since={since}&wait=30"))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    created = await feed_api.create_provider()
    body = (await waiting).json()
    assert time.monotonic() - began < 15, "the reader was not woken by the write"
    assert [(c["index"], c["uuid"]) for c in body["changes"]] == [(since + 1, created["uuid"])]


async def test_a_wait_without_news_ends_empty(feed_api: PlacementClient) -> None:
    since = await latest_index(feed_api)
    began = time.monotonic()
    response = await feed_api.get(f"/changes?since={since}&wait=1")
    assert time.monotonic() - began >= 1
    assert {**response.json(), "epoch": ""} == {"index": since, "changes": [], "epoch": ""}


async def test_a_wait_without_since_returns_what_commits_after_it_began(
    feed_api: PlacementClient,
) -> None:
    waiting = asyncio.create_task(feed_api.get("/changes?wait=30"))
    await asyncio.sleep(0.5)
    created = await feed_api.create_provider()
    assert [c["uuid"] for c in (await waiting).json()["changes"]] == [created["uuid"]]


async def _create_then_fail(factory: SessionFactory) -> None:
    async with unit_of_work(factory, write=True) as session:
        await providers.create(session, name="doomed", uuid=None, parent_uuid=None)
        raise RuntimeError("the request failed after the write")


async def test_a_rolled_back_write_leaves_no_change(settings: Settings) -> None:
    engine = create_engine(settings.database_url)
    factory = recording_session_factory(engine)
    try:
        async with unit_of_work(factory, write=True) as session:
            before = (await feed_index.sequence(session)).index
        with pytest.raises(RuntimeError):
            await _create_then_fail(factory)
        async with unit_of_work(factory, write=True) as session:
            assert (await feed_index.sequence(session)).index == before
            newer = or_(Change.feed_index.is_(None), Change.feed_index > before)
            assert await session.scalar(select(Change.ordinal).where(newer)) is None
            assert await providers.list_providers(session, providers.ProviderQuery("doomed")) == []
    finally:
        await engine.dispose()


# A trigger that refuses every new change, in each backend's dialect.
_REFUSE_CHANGES = {
    "sqlite": [
        "CREATE TRIGGER refuse_changes BEFORE INSERT ON changes "
        "BEGIN SELECT RAISE(ABORT, 'changes refused'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_changes() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'changes refused'; END $$",
        "CREATE TRIGGER refuse_changes BEFORE INSERT ON changes "
        "FOR EACH ROW EXECUTE FUNCTION refuse_changes()",
    ],
}
_ALLOW_CHANGES = {
    "sqlite": ["DROP TRIGGER refuse_changes"],
    "postgresql": ["DROP TRIGGER refuse_changes ON changes", "DROP FUNCTION refuse_changes()"],
}


async def _run(factory: SessionFactory, statements: list[str]) -> None:
    async with unit_of_work(factory, write=True) as session:
        for statement in statements:
            await session.execute(text(statement))


async def test_a_change_that_cannot_be_recorded_undoes_its_write(
    api: PlacementClient, settings: Settings, backend: str
) -> None:
    engine = create_engine(settings.database_url)
    factory = recording_session_factory(engine)
    before = await latest_index(api)
    try:
        await _run(factory, _REFUSE_CHANGES[backend])
        # The app answers a Placement 500 (the error is logged once, with the request id).
        refused = await api.post("/resource_providers", json={"name": "unrecordable"})
        assert refused.status_code == 500
        assert refused.json()["errors"][0]["detail"] == "An unexpected error occurred."
        assert (
            refused.json()["errors"][0]["request_id"] == refused.headers["x-openstack-request-id"]
        )
        async with unit_of_work(factory, write=False) as session:
            named = select(ResourceProvider.id).where(ResourceProvider.name == "unrecordable")
            assert await session.scalar(named) is None
        assert await latest_index(api) == before
    finally:
        await _run(factory, _ALLOW_CHANGES[backend])
        await engine.dispose()


def _events(text: str) -> list[tuple[str, dict[str, object]]]:
    """(event name, data) of each event of a text/event-stream body."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


@pytest.fixture
async def short_streams(settings: Settings, cleaner: AsyncEngine) -> AsyncIterator[PlacementClient]:
    """An admin client of an app whose event streams last two seconds."""
    app = create_app(settings.model_copy(update={"changes_max_wait": 2}))
    transport = ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        AsyncClient(transport=transport, base_url="http://placement") as http,
    ):
        yield PlacementClient(http)
    await databases.clean(cleaner)


async def test_the_feed_streams_as_server_sent_events(short_streams: PlacementClient) -> None:
    api = short_streams
    start = await latest_index(api)
    before = await api.create_provider()
    stream = asyncio.create_task(
        api.get(f"/changes?since={start}", headers={"accept": "text/event-stream"})
    )
    await asyncio.sleep(0.5)
    during = await api.create_provider()
    response = await stream
    assert response.headers["content-type"].startswith("text/event-stream")
    assert f"id: {start + 2}\n" in response.text
    epoch = (await api.get("/changes")).json()["epoch"]
    assert [
        (name, data.get("uuid", data.get("epoch"))) for name, data in _events(response.text)
    ] == [
        ("epoch", epoch),
        ("change", before["uuid"]),
        ("change", during["uuid"]),
    ]
    # An EventSource reconnecting sends the last id it saw.
    resumed = await api.get(
        "/changes", headers={"accept": "text/event-stream", "last-event-id": str(start + 1)}
    )
    assert [data["uuid"] for name, data in _events(resumed.text) if name == "change"] == [
        during["uuid"]
    ]


async def test_a_stream_from_a_pruned_index_is_gone(short_streams: PlacementClient) -> None:
    beyond = await latest_index(short_streams) + 1
    response = await short_streams.get(
        f"/changes?since={beyond}", headers={"accept": "text/event-stream"}
    )
    assert response.status_code == 410
    assert error_code(response) == "placement.changes.gone"


async def test_other_media_types_are_not_acceptable(api: PlacementClient) -> None:
    response = await api.get("/changes", headers={"accept": "text/html"})
    assert response.status_code == 406


async def _listeners(factory: SessionFactory, count: int) -> None:
    """Return once ``count`` connections of this database are listening."""
    listening = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE query LIKE 'LISTEN%' AND datname = current_database()"
    )
    while True:
        async with unit_of_work(factory, write=False) as session:
            if await session.scalar(listening) == count:
                return
        await asyncio.sleep(0.1)


async def test_waiting_readers_still_wake_after_the_listen_connection_is_lost(
    feed_api: PlacementClient, settings: Settings, backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's; SQLite wakes readers in process")
    engine = create_engine(settings.database_url)
    factory = recording_session_factory(engine)
    listening = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"
    # Another worker, whose write can wake the reader only by its NOTIFY.
    other_worker = create_app(settings.model_copy(update=SLOW_POLL))
    try:
        async with (
            other_worker.router.lifespan_context(other_worker),
            AsyncClient(transport=ASGITransport(app=other_worker), base_url="http://p") as http,
        ):
            # Each app's listener connects in a task of its own: on a busy machine, after start-up.
            await asyncio.wait_for(_listeners(factory, 2), 15)
            async with unit_of_work(factory, write=True) as session:
                ended = await session.execute(text(listening + " AND datname = current_database()"))
                assert ended.scalars().all() == [True, True]
            await asyncio.sleep(2)  # the listeners reconnect after a second
            since = await latest_index(feed_api)
            waiting = asyncio.create_task(feed_api.get(f"/changes?since={since}&wait=30"))
            await asyncio.sleep(0.5)
            await PlacementClient(http).create_provider(name="notified")
            body = (await asyncio.wait_for(waiting, 15)).json()
            assert [c["name"] for c in body["changes"]] == ["notified"]
    finally:
        await engine.dispose()
