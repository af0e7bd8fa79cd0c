"""``GET /heartbeats?alive=``: the liveness rule runs in the statement, to the
microsecond of the Python rule that gives ``down_after``, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.db.engine import create_engine
from placement_api.db.models import ProviderHeartbeat, ResourceProvider
from placement_api.domain import heartbeats
from placement_api.domain.changes import recording_session_factory
from tests.api.test_heartbeats import beat, listed
from tests.support.client import PlacementClient

MISSED = 3
INTERVAL = 60
GRACE = timedelta(seconds=INTERVAL * MISSED)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    try:
        yield engine
    finally:
        await engine.dispose()


async def _hosts(api: PlacementClient, count: int) -> list[str]:
    uuids = []
    for _ in range(count):
        host = await api.create_provider()
        await beat(api, host["uuid"], interval=INTERVAL)
        uuids.append(host["uuid"])
    return uuids


async def _seen_at(engine: AsyncEngine, moments: dict[str, datetime]) -> None:
    async with engine.begin() as connection:
        for uuid, moment in moments.items():
            provider_id = (
                select(ResourceProvider.id).where(ResourceProvider.uuid == uuid).scalar_subquery()
            )
            await connection.execute(
                update(ProviderHeartbeat)
                .where(ProviderHeartbeat.resource_provider_id == provider_id)
                .values(last_seen=moment)
            )


async def test_the_statement_judges_liveness_to_the_microsecond(
    api: PlacementClient, engine: AsyncEngine
) -> None:
    # Microseconds near a second's ends: SQLite's date functions keep milliseconds.
    now = datetime(2031, 5, 6, 7, 8, 9, 999_999, tzinfo=UTC)
    offsets = [timedelta(microseconds=m) for m in (-1_000_000, -1, 0, 1, 999_999, 1_000_000)]
    uuids = await _hosts(api, len(offsets) + 1)
    moments = {uuid: now - GRACE + offset for uuid, offset in zip(uuids, offsets, strict=False)}
    moments[uuids[-1]] = now.replace(microsecond=0) - GRACE  # a whole second
    await _seen_at(engine, moments)

    async with recording_session_factory(engine)() as session:
        alive = heartbeats.alive_at(session, now, MISSED)
        rows = await session.execute(
            select(ResourceProvider.uuid, alive)
            .join(ProviderHeartbeat)
            .where(ResourceProvider.uuid.in_(uuids))
        )
        judged = {uuid: bool(is_alive) for uuid, is_alive in rows}
    # The rule of the answer's down_after: alive while now <= last_seen + grace.
    assert judged == {uuid: now <= moment + GRACE for uuid, moment in moments.items()}
    assert sorted(judged.values()) == [False, False, False, True, True, True, True]


async def test_a_filtered_list_reads_only_the_hosts_it_answers_with(
    api: PlacementClient, engine: AsyncEngine
) -> None:
    uuids = await _hosts(api, 12)
    down = uuids[3:5]
    await _seen_at(engine, {uuid: datetime.now(UTC) - GRACE * 2 for uuid in down})

    async with recording_session_factory(engine)() as session:
        statements: list[tuple[str, Any]] = []

        def capture(connection: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
            if "FROM provider_heartbeats" in statement:
                statements.append((statement, parameters))

        event.listen(engine.sync_engine, "before_cursor_execute", capture)
        try:
            listed_down = await heartbeats.list_all(session, MISSED, alive=False)
        finally:
            event.remove(engine.sync_engine, "before_cursor_execute", capture)
        assert [entry.heartbeat.provider_uuid for entry in listed_down.heartbeats] == down
        # What the database handed back for that statement: the two down hosts only.
        assert len(statements) == 1
        statement, parameters = statements[0]
        connection = await session.connection()
        assert len((await connection.exec_driver_sql(statement, parameters)).all()) == 2

    # And through the API, on the server's clock: both filters partition the list.
    everyone = (await listed(api))["heartbeats"]
    only_down = (await listed(api, "?alive=false"))["heartbeats"]
    only_alive = (await listed(api, "?alive=true"))["heartbeats"]
    assert [b["resource_provider_uuid"] for b in only_down] == down
    assert only_alive == [b for b in everyone if b["alive"]]
    assert only_down == [b for b in everyone if not b["alive"]]
