"""The claims benchmark's load sections (reads, PUT and POST claims, the
floor), each sent to every server in turns, and the database checked after."""

from __future__ import annotations

import argparse
import asyncio

import candidates_data as data
import candidates_servers as servers

from bench import claims_db
from bench import claims_report as report
from bench.claims_load import (
    FLAVOR,
    PostClaims,
    PutClaims,
    Reads,
    Tally,
    Workload,
    run_block,
    warm_up,
)
from bench.claims_targets import Target
from bench.lean_http import Connection

HEADERS = {**servers.HEADERS, "openstack-api-version": "placement 1.39"}


async def _sessions(options: argparse.Namespace, target: Target) -> int:
    return await claims_db.sessions(options.pg_url, target.database) if target.database else 0


async def _section(
    options: argparse.Namespace,
    targets: list[Target],
    name: str,
    work: Workload,
    clients: int,
    *,
    claims: bool,
) -> list[report.Outcome]:
    pools = {
        t.name: [Connection(t.url, HEADERS, keep_alive=t.keep_alive) for _ in range(clients)]
        for t in targets
    }
    for target in targets:
        await warm_up(pools[target.name], work)
        if claims:
            await claims_db.reset(target.dsn, ours=target.ours)
    await asyncio.sleep(1.0)  # sessions are counted once their backend reports
    sessions = {t.name: await _sessions(options, t) for t in targets}
    tallies = {target.name: Tally() for target in targets}
    for turn in range(options.rounds):
        # Alternate who goes first, so neither always meets a warmer machine.
        for target in targets if turn % 2 == 0 else targets[::-1]:
            backends = (
                await claims_db.backend_pids(options.pg_url, target.database)
                if target.database
                else set()
            )
            await run_block(
                pools[target.name],
                work,
                options.block_seconds,
                target.pids,
                tallies[target.name],
                backends,
            )
    for pool in pools.values():
        for connection in pool:
            await connection.close()
    await asyncio.sleep(1.0)
    outcomes = []
    for target in targets:
        opened = await _sessions(options, target) - sessions[target.name]
        outcome = report.Outcome(name, target.name, tallies[target.name], opened)
        if claims:
            outcome.check = await claims_db.check(target.dsn, ours=target.ours)
            outcome.verified = outcome.check.right(outcome.tally.claims, len(FLAVOR))
        outcomes.append(outcome)
        print(report.line(outcome, claims), flush=True)
    return outcomes


async def measure(
    options: argparse.Namespace,
    targets: list[Target],
    dataset: data.Dataset,
    floor: Target | None,
) -> list[report.Outcome]:
    providers = [uuid for _, uuid, _, _, _ in dataset.providers]
    reads = {
        "GET /resource_providers/{u}/inventories": [
            f"/resource_providers/{uuid}/inventories" for uuid in providers
        ],
        "GET /allocations/{consumer}": [f"/allocations/{uuid}" for uuid, _ in dataset.consumers],
        "GET /resource_providers?in_tree={u}": [
            f"/resource_providers?in_tree={uuid}" for uuid in providers
        ],
    }
    outcomes: list[report.Outcome] = []
    for name, paths in reads.items() if "reads" in options.sections else ():
        outcomes += await _section(
            options, targets, name, Reads(paths), options.read_clients, claims=False
        )
    for clients in options.put_clients if "put" in options.sections else ():
        name = f"PUT /allocations, {clients} clients"
        outcomes += await _section(
            options, targets, name, PutClaims(providers), clients, claims=True
        )
    if floor is not None:
        clients = max(options.put_clients)
        name = f"PUT /allocations, {clients} clients"
        outcomes += await _section(
            options, [floor], name, PutClaims(providers), clients, claims=False
        )
    if "post" in options.sections:
        name = f"POST /allocations x{options.per_post}, {options.post_clients} clients"
        work = PostClaims(providers, options.per_post)
        outcomes += await _section(options, targets, name, work, options.post_clients, claims=True)
    return outcomes
