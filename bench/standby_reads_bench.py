"""The same read load served by the primary alone, then with a hot standby
taking the reads (``PLACEMENT_DATABASE_READ_URL``, docs/ha.md).

    python -m bench standby-reads [--providers 2000] [--seconds 8] [--clients 16]

A private durable primary and a streaming standby on this machine, the API
(``--workers`` processes) on the primary, ``--providers`` hosts with
a VCPU inventory. Each phase runs ``--clients`` concurrent readers
for ``--seconds`` (``GET /allocation_candidates`` and
``GET /resource_providers/{uuid}/usages``, half each) and prints reads/s
and the CPU each PostgreSQL server spent per read. One machine cannot show
more reads per second from more cores (both servers share its cores): what
it shows is the primary's CPU per read moving to the standby.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
import uuid
from pathlib import Path

import asyncpg
import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scheduler_bench_infra import cpu_seconds, cpu_used, process_tree
from placement_api.db import migrations
from tests.support.pg_cluster import PrivateCluster, private_cluster, streaming_standby
from tests.support.server import LiveServer, live_server

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}


def _postmaster(cluster: PrivateCluster) -> int:
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


async def _seed(cluster: PrivateCluster, providers: int) -> list[str]:
    """Providers with a VCPU inventory, in SQL (seeding is not measured)."""
    connection = await asyncpg.connect(cluster.url("placement").replace("+asyncpg", ""))
    try:
        uuids = [str(uuid.uuid4()) for _ in range(providers)]
        await connection.executemany(
            "INSERT INTO resource_providers (uuid, name, generation, root_provider_id) "
            "VALUES ($1, $2, 1, NULL)",
            [(u, f"host-{i}") for i, u in enumerate(uuids)],
        )
        await connection.execute("UPDATE resource_providers SET root_provider_id = id")
        await connection.execute(
            "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, "
            "min_unit, max_unit, step_size, allocation_ratio, used) "
            "SELECT rp.id, rc.id, 64, 0, 1, 64, 1, 4.0, 0 FROM resource_providers rp, "
            "resource_classes rc WHERE rc.name = 'VCPU'"
        )
        return uuids
    finally:
        await connection.close()


async def _load(url: str, providers: list[str], clients: int, seconds: float) -> int:
    rng = random.Random(26)
    done = 0
    deadline = time.monotonic() + seconds

    async def reader(client: httpx.AsyncClient, number: int) -> None:
        nonlocal done
        while time.monotonic() < deadline:
            if number % 2:
                path = "/allocation_candidates?resources=VCPU:2&limit=10"
            else:
                path = f"/resource_providers/{rng.choice(providers)}/usages"
            answer = await client.get(path)
            assert answer.status_code == 200, answer.text
            done += 1

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(
        base_url=url, headers=HEADERS, limits=limits, timeout=30
    ) as client:
        await asyncio.gather(*(reader(client, n) for n in range(clients)))
    return done


def _phase(
    name: str,
    server: LiveServer,
    primary: PrivateCluster,
    standby: PrivateCluster,
    providers: list[str],
    arguments: argparse.Namespace,
) -> None:
    asyncio.run(_load(server.url, providers, arguments.clients, 1.0))  # warm the pools
    trees = {
        "primary": process_tree(_postmaster(primary)),
        "standby": process_tree(_postmaster(standby)),
    }
    before = {role: cpu_seconds(pids) for role, pids in trees.items()}
    began = time.monotonic()
    reads = asyncio.run(_load(server.url, providers, arguments.clients, arguments.seconds))
    elapsed = time.monotonic() - began
    used = {
        role: cpu_used(before[role], cpu_seconds(process_tree(_postmaster(cluster))))
        for role, cluster in (("primary", primary), ("standby", standby))
    }
    per_read = {role: seconds / reads * 1e6 for role, seconds in used.items()}
    print(
        f"{name:<22} {reads / elapsed:>7.0f} reads/s   primary {per_read['primary']:>5.0f} µs "
        f"CPU/read   standby {per_read['standby']:>5.0f} µs CPU/read",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    arguments = parser.parse_args()
    with private_cluster() as primary:

        async def create() -> None:
            admin = await asyncpg.connect(primary.url().replace("+asyncpg", ""))
            try:
                await admin.execute("CREATE DATABASE placement")
            finally:
                await admin.close()

        asyncio.run(create())
        migrations.upgrade(primary.url("placement"))
        with streaming_standby(primary) as standby:
            env = {"PLACEMENT_DATABASE_POOL_SIZE": "8"}
            with live_server(primary.url("placement"), workers=arguments.workers, **env) as server:
                providers = asyncio.run(_seed(primary, arguments.providers))
                print(
                    f"{arguments.providers} providers, {arguments.clients} readers, "
                    f"{arguments.workers} API workers, {arguments.seconds:g}s per phase"
                )
                _phase("primary alone", server, primary, standby, providers, arguments)
            with live_server(
                primary.url("placement"),
                workers=arguments.workers,
                PLACEMENT_DATABASE_READ_URL=standby.url("placement"),
                **env,
            ) as server:
                _phase("reads on the standby", server, primary, standby, providers, arguments)


if __name__ == "__main__":
    main()
