"""Section 1 of the abuse benchmark: candidate explosions (16**G combinations,
no limit) on one worker, while ordinary requests share it."""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from bench.abuse_load import (
    HEADERS,
    MB,
    Ordinary,
    beside,
    memory_kib,
    ms,
    quantile,
    reset_peak,
    workers,
)
from bench.scheduler_bench_infra import Server

CHILDREN = 16


async def wide_host(http: httpx.AsyncClient) -> str:
    await http.put("/resource_classes/CUSTOM_UNIT")
    host = (await http.post("/resource_providers", json={"name": "wide-host"})).json()["uuid"]
    for index in range(CHILDREN):
        child = await http.post(
            "/resource_providers", json={"name": f"child-{index}", "parent_provider_uuid": host}
        )
        uuid = child.json()["uuid"]
        inventory = {
            "resource_provider_generation": 0,
            "inventories": {"CUSTOM_UNIT": {"total": 8}},
        }
        response = await http.put(f"/resource_providers/{uuid}/inventories", json=inventory)
        assert response.status_code == 200, response.text
    return str(host)


async def candidates_section(server: Server, options: argparse.Namespace) -> None:
    async with httpx.AsyncClient(base_url=server.url, headers=HEADERS, timeout=300) as http:
        host = await wide_host(http)
        (worker,) = workers(server)
        print(
            "\n### Candidates abuse (PostgreSQL, one worker, 16 children, no limit)\n\n"
            "| G | combinations | status | candidates | seconds | MB | worker peak growth MB "
            "| ordinary GET p50 / p99 / max ms |\n|---|---|---|---|---|---|---|---|"
        )
        for groups in options.groups:
            asked = "&".join(f"resources{g}=CUSTOM_UNIT:1" for g in range(1, groups + 1))
            path = f"/allocation_candidates?{asked}&group_policy=none"
            ordinary = Ordinary(server.url, f"/resource_providers/{host}", options.clients)
            reset_peak(worker)
            before = memory_kib(worker, "VmRSS")

            async def abuse(path: str = path) -> tuple[httpx.Response, float]:
                started = time.perf_counter()
                response = await http.get(path)
                return response, time.perf_counter() - started

            response, seconds = await beside(ordinary, abuse)
            growth = (memory_kib(worker, "VmHWM") - before) / 1024
            found = (
                len(response.json()["allocation_requests"]) if response.status_code == 200 else "-"
            )
            lat = ordinary.latencies
            print(
                f"| {groups} | {CHILDREN**groups:,} | {response.status_code} | {found} | "
                f"{seconds:.2f} | {len(response.content) / MB:.1f} | {growth:.0f} | "
                f"{ms(statistics.median(lat))} / {ms(quantile(lat, 0.99))} / {ms(max(lat))} |",
                flush=True,
            )
