"""``openstack_placement_up`` on /metrics: 1 while the database answers, 0 (on a
200 page, so that openstack-exporter's alert fires) once it does not. Each
backend gets a database of its own here, since the test takes it away."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest
from httpx import ASGITransport, AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from placement_api.app import create_app
from placement_api.db import migrations
from placement_api.settings import Settings
from tests.support import databases

ADMIN = {"x-auth-token": "admin"}
# (database url, how to take the database away)
Broken = tuple[str, Callable[[], Awaitable[None]]]


@asynccontextmanager
async def _sqlite() -> AsyncIterator[Broken]:
    with tempfile.TemporaryDirectory(prefix="placement-up-") as directory:
        source = Path(directory) / "db"
        source.mkdir()
        url = f"sqlite+aiosqlite:///{source}/placement.sqlite"
        await asyncio.to_thread(migrations.upgrade, url)

        async def remove() -> None:
            shutil.rmtree(source)

        yield url, remove


@asynccontextmanager
async def _postgresql() -> AsyncIterator[Broken]:
    name, url = await databases.create_pg_database()
    try:
        await asyncio.to_thread(migrations.upgrade, url)

        async def refuse() -> None:
            admin = await asyncpg.connect(databases.PG_ADMIN_URL)
            try:
                await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                    name,
                )
            finally:
                await admin.close()

        yield url, refuse
    finally:
        await databases.drop_pg_database(name)


def _up(page: str) -> list[float]:
    return [
        sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
        if sample.name == "openstack_placement_up"
    ]


@pytest.mark.parametrize("backend", databases.BACKENDS)
async def test_placement_up_is_1_while_the_database_answers_and_0_after(backend: str) -> None:
    database = _sqlite() if backend == "sqlite" else _postgresql()
    async with database as (url, take_away):
        settings = Settings(database_url=url, metrics_enabled=True, healthcheck_timeout=5)
        app = create_app(settings)
        async with (
            app.router.lifespan_context(app),
            AsyncClient(transport=ASGITransport(app=app), base_url="http://p") as http,
        ):
            before = await http.get("/metrics", headers=ADMIN)
            assert before.status_code == 200, before.text
            assert _up(before.text) == [1.0]
            await take_away()
            after = await http.get("/metrics", headers=ADMIN)
            assert after.status_code == 200, after.text
            assert _up(after.text) == [0.0]
            assert "openstack_placement_resource_total{" not in after.text
