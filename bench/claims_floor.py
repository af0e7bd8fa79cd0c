"""The floor under a PUT claim on this machine: what any HTTP API would pay.

``app`` is the cheapest ``PUT /allocations/{uuid}`` FastAPI can serve: it
reads the body and answers 204, touching no database. The claims benchmark's
``floor`` section loads it, under uvicorn with as many workers as ours and
with the same clients, to measure what HTTP and ASGI alone cost a request
here. Added to what PostgreSQL and the load generator spent per claim of
ours in the same run, it bounds how many claims per second the machine's
cores can make, whatever the API does (``bound``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response

from bench.claims_load import Tally
from bench.upstream import ROOT, running

app = FastAPI()


@app.get("/")
async def root() -> dict[str, str]:
    return {}


@app.put("/allocations/{consumer_uuid}", status_code=204)
async def claim(consumer_uuid: str, request: Request) -> Response:
    await request.body()
    return Response(status_code=204)


@contextmanager
def empty_endpoint_server(log: Path, workers: int) -> Iterator[str]:
    """``app`` under uvicorn (httptools, uvloop where installed); its base URL."""
    command = [sys.executable, "-m", "uvicorn", "bench.claims_floor:app", "--port", "{port}"]
    command += ["--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    with running(command, dict(os.environ), log, cwd=ROOT) as base_url:
        yield base_url


def bound(floor: Tally, ours: Tally, upstream: Tally | None) -> str:
    """The most PUT claims/s the cores allow: each claim costs at least the
    empty endpoint's CPU plus ours' PostgreSQL and load-generator CPU."""
    cores = os.cpu_count() or 1
    api = floor.cpu_ms(floor.server_cpu, claims=False)
    database = ours.cpu_ms(ours.database_cpu, claims=True)
    generator = 1000 * ours.bench_cpu / max(ours.claims, 1)
    most = cores * 1000 / (api + database + generator)
    against = ""
    theirs = upstream.per_second(claims=True) if upstream is not None else 0.0
    if theirs:
        against = f" = {most / theirs:.1f}x upstream's {theirs:.0f}/s"
    return (
        f"Floor: an empty endpoint (bench/claims_floor.py) served "
        f"{floor.per_second(claims=False):.0f} PUT/s at {api:.2f} ms of server CPU each. "
        f"With ours' PostgreSQL ({database:.2f} ms) and load generator ({generator:.2f} ms) "
        f"per claim, "
        f"{cores} cores make at most {cores} / ({api:.2f} + {database:.2f} + {generator:.2f}) ms "
        f"= {most:.0f} claims/s{against}; ours made {ours.per_second(claims=True):.0f}/s."
    )
