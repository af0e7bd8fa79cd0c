"""Moving a cloud from upstream Placement (16.0.0 on MariaDB or PostgreSQL)
into ours and back: both servers then answer every read alike, generations
included, and accept the same writes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from placement_api.db.engine import create_engine
from tests.migration import reads
from tests.migration.cloud import Cloud, build
from tests.migration.conftest import run_db_command
from tests.support import upstream
from tests.support.server import live_server

HEADERS = {"x-auth-token": "admin", "accept": "application/json"}


@dataclass(frozen=True)
class UpstreamCloud:
    backend: str
    database_url: str
    client: httpx.Client
    cloud: Cloud


@contextmanager
def client(base_url: str) -> Iterator[httpx.Client]:
    # A fresh connection per request: uWSGI's http-socket does not keep
    # connections alive. Without "Connection: close" the pool could still hand
    # a just-answered connection to a waiting thread before uWSGI's close
    # arrived (seen once under load: "Server disconnected without sending a
    # response").
    limits = httpx.Limits(max_keepalive_connections=0)
    headers = {**HEADERS, "connection": "close"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60, limits=limits) as http:
        yield http


@pytest.fixture(scope="module", params=upstream.BACKENDS)
def upstream_cloud(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[UpstreamCloud]:
    backend: str = request.param
    config = tmp_path_factory.mktemp(f"upstream-{backend}")
    with upstream.upstream_database(backend) as url:
        upstream.db_sync(url, config)
        with upstream.upstream_server(config) as base_url, client(base_url) as http:
            yield UpstreamCloud(backend, url, http, build(http))


def write_with_current_generations(http: httpx.Client, cloud: Cloud) -> list[tuple[int, Any]]:
    """Writes that carry the generations the server shows; returns each answer."""
    latest = {"openstack-api-version": "placement 1.39"}
    cn2 = cloud.providers["cn2"]
    generation = http.get(f"/resource_providers/{cn2}", headers=latest).json()["generation"]
    inventory = {
        "resource_provider_generation": generation,
        "inventories": {
            "VCPU": {"total": 32},
            "MEMORY_MB": {"total": 32768},
            "DISK_GB": {"total": 200},
            "CUSTOM_MAGIC": {"total": 5},
        },
    }
    answers = [http.put(f"/resource_providers/{cn2}/inventories", json=inventory, headers=latest)]
    # The same generation again is stale now.
    answers.append(
        http.put(f"/resource_providers/{cn2}/inventories", json=inventory, headers=latest)
    )
    vm1 = cloud.consumers["vm1"]
    current = http.get(f"/allocations/{vm1}", headers=latest).json()
    current["allocations"][cloud.providers["cn1_numa0"]]["resources"]["VCPU"] = 3
    for provider in current["allocations"].values():
        provider.pop("generation", None)
    current["consumer_type"] = "INSTANCE"
    answers.append(http.put(f"/allocations/{vm1}", json=current, headers=latest))
    return [
        (answer.status_code, answer.json() if answer.status_code == 200 else None)
        for answer in answers
    ]


def _feed_epoch(url: str) -> str:
    async def read() -> str:
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                found = await connection.execute(text("SELECT epoch FROM change_feed_head"))
                return str(found.scalar_one())
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_imported_cloud_answers_as_upstream_and_exports_back(
    upstream_cloud: UpstreamCloud, ours_url: str, tmp_path: Path
) -> None:
    cloud, theirs = upstream_cloud.cloud, upstream_cloud.client
    every_read = reads.read_requests(cloud, upstream_cloud.backend)
    after_writes = reads.touched_by_writes(cloud, upstream_cloud.backend)
    config = tmp_path / "exported"
    with (
        upstream.upstream_database(upstream_cloud.backend) as target,
        ThreadPoolExecutor(max_workers=1) as background,
    ):
        # The target of the export is made meanwhile, by upstream's migrations.
        target_ready = background.submit(upstream.db_sync, target, config)
        imported = run_db_command(
            "import",
            "--source",
            upstream.as_operators_write_it(upstream_cloud.database_url),
            url=ours_url,
        )
        assert imported.returncode == 0, imported.stderr
        # Copies kept from the feed (schedulers, the provider index) read anew.
        assert _feed_epoch(ours_url).startswith("import-")
        with live_server(ours_url) as server, client(server.url) as ours:
            assert reads.differences(ours, theirs, every_read) == []
            written = write_with_current_generations(ours, cloud)
            assert [status for status, _ in written] == [200, 409, 204]
            assert written == write_with_current_generations(theirs, cloud)
            assert reads.differences(ours, theirs, after_writes) == []
            target_ready.result()
            exported = run_db_command(
                "export", "--target", upstream.as_operators_write_it(target), url=ours_url
            )
            assert exported.returncode == 0, exported.stderr
            with upstream.upstream_server(config) as base_url, client(base_url) as moved_back:
                assert reads.differences(ours, moved_back, every_read) == []
