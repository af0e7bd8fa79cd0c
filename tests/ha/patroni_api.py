"""The API on a private Patroni cluster, for the tests of this directory:
``api_on_patroni`` starts the cluster, migrates it, and runs API processes
on its multi-host URL, as deploy/ shows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx

from placement_api.db import migrations
from tests.ha.traffic import HEADERS, create_providers
from tests.support.patroni_cluster import PatroniCluster, patroni_cluster
from tests.support.server import LiveServer, live_server

API_ENV: dict[str, Any] = {
    "PLACEMENT_DATABASE_CONNECT_TIMEOUT": "1",
    "PLACEMENT_DATABASE_STATEMENT_TIMEOUT": "5",
    "PLACEMENT_DATABASE_LOCK_TIMEOUT": "5",
    "PLACEMENT_DATABASE_POOL_TIMEOUT": "2",
    "PLACEMENT_REQUEST_TIMEOUT": "8",
    "PLACEMENT_RETRY_AFTER": "1",
}


@dataclass
class Setup:
    cluster: PatroniCluster
    servers: list[LiveServer]
    providers: list[str]

    @property
    def server(self) -> LiveServer:
        return self.servers[0]


async def _create_database(cluster: PatroniCluster) -> None:
    leader = cluster.leader()
    admin = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{leader.port}/postgres")
    try:
        await admin.execute("CREATE DATABASE placement")
    finally:
        await admin.close()


@contextmanager
def api_on_patroni(
    *, synchronous: bool, servers: int = 1, providers_wanted: int = 6
) -> Iterator[Setup]:
    """A Patroni cluster and ``servers`` API processes on its multi-host URL
    (standing in for API servers on several machines)."""
    with patroni_cluster(2, synchronous=synchronous) as cluster, ExitStack() as stack:
        asyncio.run(_create_database(cluster))
        migrations.upgrade(cluster.url())
        running = [
            stack.enter_context(live_server(cluster.url(), **API_ENV)) for _ in range(servers)
        ]
        with httpx.Client(base_url=running[0].url, headers=HEADERS, timeout=30) as client:
            providers = create_providers(client, providers_wanted)
        yield Setup(cluster, running, providers)
