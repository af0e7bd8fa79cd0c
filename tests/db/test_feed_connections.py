"""The change feed's own connections (LISTEN, NOTIFY) follow the primary as
the engine does: every host of a multi-host URL and its
``target_session_attrs``, not the last host alone; a listener that cannot
connect says so once and keeps trying."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest
from sqlalchemy import text

from placement_api.db.direct_connect import connect_arguments
from placement_api.db.engine import create_engine
from placement_api.domain import changes
from placement_api.services.feed_connections import Listener
from tests.support.databases import BACKENDS, PG_ADMIN_URL
from tests.support.server import free_port

TWO_HOSTS = (
    "postgresql+asyncpg://placement:secret@/placement"
    "?host=db1.example:5432&host=db2.example:5433&target_session_attrs=read-write"
)

needs_postgresql = pytest.mark.skipif(
    "postgresql" not in BACKENDS, reason="LISTEN/NOTIFY is PostgreSQL's"
)


def test_a_two_host_url_gives_every_host_its_port_and_the_session_attributes() -> None:
    arguments = connect_arguments(TWO_HOSTS, timeout=3.0)
    assert arguments["host"] == ["db1.example", "db2.example"]
    assert arguments["port"] == [5432, 5433]
    assert arguments["target_session_attrs"] == "read-write"
    assert (arguments["user"], arguments["password"], arguments["database"]) == (
        "placement",
        "secret",
        "placement",
    )
    assert arguments["timeout"] == 3.0


def test_the_deployed_multi_host_url_reaches_every_database_machine() -> None:
    env = Path(__file__).resolve().parents[2] / "deploy" / "ha" / "placement-api-multihost.env"
    settings = dict(
        line.split("=", 1)
        for line in env.read_text().splitlines()
        if "=" in line and line[0] != "#"
    )
    writes = connect_arguments(settings["PLACEMENT_DATABASE_URL"], timeout=1)
    assert (len(writes["host"]), writes["target_session_attrs"]) == (3, "read-write")
    reads = connect_arguments(settings["PLACEMENT_DATABASE_READ_URL"], timeout=1)
    assert (len(reads["host"]), reads["target_session_attrs"]) == (3, "prefer-standby")


def _two_host_url(live_first: bool) -> str:
    """The test server and a port nobody listens on, in either order."""
    live = urlsplit(PG_ADMIN_URL)
    hosts = [f"{live.hostname}:{live.port or 5432}", f"127.0.0.1:{free_port()}"]
    if not live_first:
        hosts.reverse()
    query = "&".join(f"host={host}" for host in hosts)
    return (
        f"postgresql+asyncpg://{live.username}@{live.path}?{query}&target_session_attrs=read-write"
    )


@needs_postgresql
@pytest.mark.parametrize("live_first", [True, False])
async def test_the_listener_reaches_the_primary_wherever_it_is_listed(live_first: bool) -> None:
    url = _two_host_url(live_first)
    news = asyncio.Event()
    listening = asyncio.create_task(Listener(connect_arguments(url, timeout=2), news).run())
    try:
        # Connected: it wakes the readers once, for whatever committed meanwhile.
        await asyncio.wait_for(news.wait(), 10)
        news.clear()
        engine = create_engine(url)
        try:
            async with engine.begin() as connection:
                await connection.execute(
                    text("SELECT pg_notify(:channel, '')"), {"channel": changes.NOTIFY_CHANNEL}
                )
        finally:
            await engine.dispose()
        await asyncio.wait_for(news.wait(), 5)
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def test_a_listener_that_cannot_connect_logs_once_and_keeps_trying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dead = [free_port(), free_port()]
    url = (
        "postgresql+asyncpg://postgres@/placement"
        f"?host=127.0.0.1:{dead[0]}&host=127.0.0.1:{dead[1]}&target_session_attrs=read-write"
    )
    listening = asyncio.create_task(
        Listener(connect_arguments(url, timeout=1), asyncio.Event()).run()
    )
    with caplog.at_level(logging.WARNING, logger="placement_api.services.change_feed"):
        await asyncio.sleep(1.5)
    try:
        assert not listening.done()
        warnings = [r for r in caplog.records if "LISTEN failed" in r.getMessage()]
        # Several tries in 1.5 s, one warning: a long outage does not flood the log.
        assert len(warnings) == 1
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


@needs_postgresql
async def test_a_connection_refused_as_not_the_primary_is_retried() -> None:
    """``target_session_attrs=standby`` against a primary: asyncpg refuses every
    host, with an error of its own (not an OSError): the loop must survive it."""
    live = urlsplit(PG_ADMIN_URL)
    url = (
        f"postgresql+asyncpg://{live.username}@{live.path}"
        f"?host={live.hostname}:{live.port or 5432}&target_session_attrs=standby"
    )
    with pytest.raises(asyncpg.exceptions.TargetServerAttributeNotMatched):
        await asyncpg.connect(**connect_arguments(url, timeout=2))
    listening = asyncio.create_task(
        Listener(connect_arguments(url, timeout=2), asyncio.Event()).run()
    )
    await asyncio.sleep(0.6)
    try:
        assert not listening.done()
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
