"""Where a single-consumer ``PUT /allocations/{uuid}`` spends its CPU, in process.

    python bench/claims_profile.py                      # CPU per claim, by phase, cProfile
    python bench/claims_profile.py --claims 3000 --top 60 --save var/bench/put.prof
    python bench/claims_profile.py --per-post 50 --claims 200   # POST /allocations x50
    python bench/claims_profile.py --access-log var/bench/access.log   # what the access log costs

A scratch PostgreSQL database with ``--providers`` hosts; the app is called
as the server calls it (raw ASGI, no HTTP client in the way), one claim at a
time (new consumer, VCPU:1 MEMORY_MB:256 DISK_GB:1 on a random host). First
the CPU per claim of this process without the profiler (app, SQLAlchemy and
asyncpg) and of the PostgreSQL sessions open on the database (its own
work, the same claims: one at a time, so no lock waits in it), then by phase of the request
(``claims_phases.py``), then the same under cProfile, printed by cumulative
time. With ``--per-post N`` each request is a ``POST /allocations`` of N
new consumers (on random hosts): CPU is given per consumer, and the phases
also in wall time per request, round trips and PostgreSQL's work included.
With ``--access-log FILE``, only the CPU per claim with the logging ``serve``
sets up as shipped (``info``: an access line per request, written to FILE)
against ``--log-level warning``, in alternating turns.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import logging.config
import os
import pstats
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import candidates_servers as servers

from bench import claims_db
from bench.claims_load import FLAVOR
from bench.claims_phases import report as phases_report
from bench.claims_phases import timed_phases
from bench.scheduler_bench_infra import cpu_seconds, cpu_used
from placement_api.app import create_app
from placement_api.observability.logs import logging_config
from placement_api.settings import Settings

HEADERS = [
    (b"x-auth-token", b"admin"),
    (b"openstack-api-version", b"placement 1.39"),
    (b"content-type", b"application/json"),
]


async def call(app: Any, method: str, path: str, body: bytes = b"") -> int:
    """One request through the ASGI app, as uvicorn would make it; the status."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("bench", 80),
    }
    sent = asyncio.Event()
    status = 0
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await sent.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif not message.get("more_body", False):
            sent.set()

    await app(scope, receive, send)
    return status


async def seed(app: Any, count: int) -> list[str]:
    providers = []
    for number in range(count):
        ident = str(uuid.uuid4())
        made = json.dumps({"name": f"host-{number}", "uuid": ident}).encode()
        assert await call(app, "POST", "/resource_providers", made) == 200
        inventory = {
            "resource_provider_generation": 0,
            "inventories": {
                "VCPU": {"total": 10**6},
                "MEMORY_MB": {"total": 10**9},
                "DISK_GB": {"total": 10**7},
            },
        }
        body = json.dumps(inventory).encode()
        status = await call(app, "PUT", f"/resource_providers/{ident}/inventories", body)
        assert status == 200, status
        providers.append(ident)
    return providers


def claim_body(provider: str) -> bytes:
    return json.dumps(
        {
            "allocations": {provider: {"resources": FLAVOR}},
            "project_id": "bench",
            "user_id": "bench",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
    ).encode()


def post_body(providers: list[str], rng: random.Random, consumers: int) -> bytes:
    return json.dumps(
        {str(uuid.uuid4()): json.loads(claim_body(rng.choice(providers))) for _ in range(consumers)}
    ).encode()


async def claims(app: Any, providers: list[str], count: int, per_post: int = 0) -> float:
    """``count`` claims one after the other (``per_post``: that many per
    POST); this process's CPU seconds for them."""
    rng = random.Random(7)
    if per_post:
        requests = [
            ("POST", "/allocations", post_body(providers, rng, per_post))
            for _ in range(count // per_post)
        ]
    else:
        requests = [
            ("PUT", f"/allocations/{uuid.uuid4()}", claim_body(rng.choice(providers)))
            for _ in range(count)
        ]
    started = time.process_time()
    for method, path, body in requests:
        status = await call(app, method, path, body)
        assert status == 204, status
    return time.process_time() - started


async def access_log_cost(app: Any, providers: list[str], count: int, log: Path) -> None:
    """CPU per claim with the access log on (``serve``'s logging at ``info``,
    into ``log``) and off (at ``warning``), in turns: the machine's drift
    weighs on both alike."""
    with log.open("a") as stream:
        sys.stderr = stream
        logging.config.dictConfig(logging_config("text", "info"))
        spent = {"info": 0.0, "warning": 0.0}
        for turn in range(8):
            level = "info" if turn % 2 == 0 else "warning"
            logging.getLogger().setLevel(level.upper())
            spent[level] += await claims(app, providers, count // 8)
        sys.stderr = sys.__stderr__
    per_claim = {level: 1000 * seconds / (count // 2) for level, seconds in spent.items()}
    print(
        f"in process, ms CPU per claim: as shipped (info, access log) {per_claim['info']:.3f}, "
        f"--log-level warning {per_claim['warning']:.3f} "
        f"({per_claim['info'] / per_claim['warning'] - 1:+.1%})"
    )


async def profile(options: argparse.Namespace, url: str, database: str) -> None:
    app = create_app(Settings(database_url=url, auth_strategy="noauth2"))
    async with app.router.lifespan_context(app):
        providers = await seed(app, options.providers)
        count, per_post = options.claims, options.per_post
        await claims(app, providers, count // 4, per_post)  # warm: pools, caches, statements
        if options.access_log is not None:
            await access_log_cost(app, providers, count, options.access_log)
            return
        backends = await claims_db.backend_pids(options.pg_url, database)
        before = cpu_seconds(backends)
        cpu = await claims(app, providers, count, per_post)
        database_cpu = cpu_used(before, cpu_seconds(backends))
        print(f"in process: {1000 * cpu / count:.3f} ms CPU per claim (no profiler)")
        print(f"PostgreSQL: {1000 * database_cpu / count:.3f} ms CPU per claim (its sessions)")
        spent: dict[str, float] = {}
        with timed_phases(spent):
            cpu = await claims(app, providers, count, per_post)
        print(f"by phase, ms CPU per claim:\n{phases_report(spent, cpu, count)}")
        if per_post:
            walls: dict[str, float] = {}
            started = time.perf_counter()
            with timed_phases(walls, time.perf_counter):
                await claims(app, providers, count, per_post)
            wall = time.perf_counter() - started
            print(f"by phase, wall ms per POST:\n{phases_report(walls, wall, count // per_post)}")
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        await claims(app, providers, count, per_post)
        profiler.disable()
    if options.save:
        profiler.dump_stats(options.save)
    stats = pstats.Stats(profiler)
    print(f"cProfile, {count} claims (times include the profiler's overhead):")
    stats.sort_stats("cumulative").print_stats(options.top)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--providers", type=int, default=100)
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--top", type=int, default=50, help="functions printed")
    parser.add_argument(
        "--per-post", type=int, default=0, help="consumers per POST /allocations (0: PUT)"
    )
    parser.add_argument("--save", type=Path, help="write the raw profile here (pstats)")
    parser.add_argument(
        "--access-log",
        type=Path,
        metavar="FILE",
        help="only compare the CPU per claim with the access log on (written to FILE) and off",
    )
    servers.add_pg_url_option(parser)
    options = parser.parse_args()
    database = f"bench_claims_profile_{os.getpid()}"
    try:
        url = servers.prepare_ours(options.pg_url, database)
        asyncio.run(profile(options, url, database))
    finally:
        asyncio.run(servers.drop_database(options.pg_url, database))


if __name__ == "__main__":
    main()
