"""Where one API request spends its CPU, in process, layer by layer.

    python bench/request_profile.py inventories          # CPU per request, no profiler
    python bench/request_profile.py inventories --record var/bench/inventories.txt
    python bench/request_profile.py --stacks var/bench/inventories.txt --cpu-ms 2.0

A scratch PostgreSQL database with ``--providers`` hosts, each with
inventory and one consumer, plus a root with two children; the app is
called as uvicorn calls it (raw ASGI, ``bench/claims_profile.py``), one
request at a time, and this process's CPU per request is printed
(PostgreSQL's own work is not in it). Kinds: ``root`` (``GET /``: the
middleware alone), ``inventories``, ``allocations``, ``in_tree`` (the reads
every client makes on every pass) and ``put`` (one new consumer's claim).

``--record FILE`` then samples the same requests again with py-spy
(``pip install py-spy``; attached only once the data is made, sampling
only while Python runs, not while the loop waits for I/O), keeps its raw
output in FILE and splits the samples into the layers of ``LAYERS``: each
sample goes to the first layer any of its frames belongs to, its share
given in ms of the CPU per request measured without the profiler.
``--stacks FILE --cpu-ms N`` splits a kept FILE again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import candidates_servers as servers

from bench.claims_profile import call, claim_body, seed
from placement_api.app import create_app
from placement_api.settings import Settings

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("py-spy's own start (not counted)", ("_find_and_load",)),
    ("access log and metrics", ("AccessMiddleware._record", "prometheus_client")),
    ("policy", ("placement_api/auth/policy.py",)),
    ("auth context", ("placement_api/auth/context.py",)),
    ("pool checkout ping", ("_ping (placement_api/db/engine.py",)),
    ("session: begin and checkout", ("Session.connection", "_connection_for_bind")),
    ("session: commit and checkin", ("Session.commit", "SessionTransaction.commit")),
    ("session: close", ("Session.close", "AsyncSession.__aexit__")),
    ("SQL: asyncpg", ("asyncpg/",)),
    ("SQL: SQLAlchemy (compile, execute, rows)", ("sqlalchemy/",)),
    ("body, validation", ("schemas/", "write_limits", "json_body", "decode_json", "pydantic")),
    ("domain", ("placement_api/domain/",)),
    ("rendering and sending the answer", ("rendering.py", "starlette/responses.py", "json/")),
    ("handler", ("placement_api/web/routers/",)),
    ("dependency injection", ("fastapi/dependencies", "deps.py", "lean_route.py")),
    ("routing", ("starlette/routing.py", "fastapi/routing.py")),
    ("request limits middleware", ("request_limits.py",)),
    ("request middleware (id, microversion, checks)", ("middleware.py", "microversion.py")),
    ("other FastAPI/Starlette layers", ("fastapi/", "starlette/")),
    ("event loop, tasks, other", ("",)),
]


async def _fixture(app: Any, count: int) -> dict[str, Any]:
    providers = await seed(app, count)
    consumers = []
    for provider in providers:
        consumer = str(uuid.uuid4())
        assert await call(app, "PUT", f"/allocations/{consumer}", claim_body(provider)) == 204
        consumers.append(consumer)
    root = str(uuid.uuid4())
    made = {"name": "root", "uuid": root}
    assert await call(app, "POST", "/resource_providers", json.dumps(made).encode()) == 200
    for number in range(2):
        child = {"name": f"numa{number}", "uuid": str(uuid.uuid4()), "parent_provider_uuid": root}
        assert await call(app, "POST", "/resource_providers", json.dumps(child).encode()) == 200
    return {"providers": providers, "consumers": consumers, "root": root}


def _request(kind: str, fixture: dict[str, Any], number: int) -> tuple[str, str, bytes]:
    providers = fixture["providers"]
    if kind == "put":
        body = claim_body(providers[number % len(providers)])
        return "PUT", f"/allocations/{uuid.uuid4()}", body
    paths = {
        "root": "/",
        "inventories": f"/resource_providers/{providers[0]}/inventories",
        "allocations": f"/allocations/{fixture['consumers'][0]}",
        "in_tree": f"/resource_providers?in_tree={fixture['root']}",
    }
    return "GET", paths[kind], b""


async def _run(app: Any, kind: str, fixture: dict[str, Any], count: int) -> float:
    """``count`` requests one after the other; this process's CPU seconds for them."""
    requests = [_request(kind, fixture, number) for number in range(count)]
    started = time.process_time()
    for method, path, body in requests:
        status = await call(app, method, path, body)
        assert status < 300, status
    return time.process_time() - started


async def measure(options: argparse.Namespace, url: str) -> None:
    app = create_app(Settings(database_url=url, auth_strategy="noauth2"))
    async with app.router.lifespan_context(app):
        fixture = await _fixture(app, options.providers)
        await _run(app, options.kind, fixture, options.requests // 4)  # warm
        cpu = await _run(app, options.kind, fixture, options.requests)
        cpu_ms = 1000 * cpu / options.requests
        print(f"{options.kind}: {cpu_ms:.3f} ms CPU per request in process")
        if options.record is None:
            return
        sampler = [
            "py-spy",
            "record",
            "--gil",
            "-r",
            "1000",
            "-f",
            "raw",
            "-o",
            str(options.record),
        ]
        recording = await asyncio.create_subprocess_exec(*sampler, "--pid", str(os.getpid()))
        await asyncio.sleep(1)  # py-spy attached
        await _run(app, options.kind, fixture, options.requests)
        recording.send_signal(signal.SIGINT)
        await recording.wait()
    layers(options.record, cpu_ms)


def layers(stacks: Path, cpu_ms: float | None) -> None:
    counts: Counter[str] = Counter()
    for line in stacks.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        name = next(name for name, marks in LAYERS if any(mark in stack for mark in marks))
        counts[name] += int(samples)
    total = sum(n for name, n in counts.items() if name != LAYERS[0][0])
    for name, _ in LAYERS[1:]:
        share = counts[name] / total
        shown = f"{share * cpu_ms:6.3f} ms" if cpu_ms is not None else ""
        print(f"{100 * share:5.1f}% {shown}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "kind", nargs="?", choices=["root", "inventories", "allocations", "in_tree", "put"]
    )
    parser.add_argument("--providers", type=int, default=50)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--record", type=Path, help="sample with py-spy, keep its output here")
    parser.add_argument("--stacks", type=Path, help="py-spy raw output to split into layers")
    parser.add_argument("--cpu-ms", type=float, help="CPU per request, to show shares in ms")
    servers.add_pg_url_option(parser)
    options = parser.parse_args()
    if options.stacks is not None:
        layers(options.stacks, options.cpu_ms)
        return
    if options.kind is None:
        parser.error("name a kind of request, or give --stacks")
    database = f"bench_request_profile_{os.getpid()}"
    try:
        url = servers.prepare_ours(options.pg_url, database)
        asyncio.run(measure(options, url))
    finally:
        asyncio.run(servers.drop_database(options.pg_url, database))


if __name__ == "__main__":
    main()
