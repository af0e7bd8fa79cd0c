"""The claims benchmark's servers: each on a database of its own, loaded with
the same data (ours, ours as shipped, a baseline commit of ours, upstream),
and the floor's empty endpoint."""

from __future__ import annotations

import argparse
import asyncio
import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import candidates_data as data
import candidates_servers as servers

from bench import claims_floor
from bench import claims_report as report
from bench.change_feed_bench import baseline_tree


@dataclass
class Target:
    name: str
    url: str
    database: str
    dsn: str
    pids: set[int]
    keep_alive: bool
    ours: bool


def start(
    options: argparse.Namespace,
    dataset: data.Dataset,
    work: Path,
    stack: ExitStack,
    created: list[str],
) -> tuple[list[Target], Target | None, str | None]:
    """Every server the options ask for, up on ``stack``, its database named in
    ``created`` (the caller drops them); the floor's endpoint when the floor
    section runs; upstream's version when it is served."""
    suffix = os.getpid()
    ours_db, upstream_db = f"bench_claims_ours_{suffix}", f"bench_claims_upstream_{suffix}"
    targets: list[Target] = []
    version = None
    url = servers.prepare_ours(options.pg_url, ours_db)
    created.append(ours_db)
    ours_dsn = servers.server_dsn(options.pg_url, ours_db)
    asyncio.run(data.load(ours_dsn, dataset, data.OURS))
    ours_url = stack.enter_context(
        servers.ours_server(url, work / "ours.log", workers=options.workers)
    )
    targets.append(
        Target("ours", ours_url, ours_db, ours_dsn, servers.server_pids(ours_url), True, True)
    )
    if options.defaults:
        # The same code as shipped: an access log line per request.
        shipped_db = f"bench_claims_defaults_{suffix}"
        shipped_url = servers.prepare_ours(options.pg_url, shipped_db)
        created.append(shipped_db)
        shipped_dsn = servers.server_dsn(options.pg_url, shipped_db)
        asyncio.run(data.load(shipped_dsn, dataset, data.OURS))
        served = stack.enter_context(
            servers.ours_server(
                shipped_url,
                work / "ours-defaults.log",
                workers=options.workers,
                log_level=None,
            )
        )
        targets.append(
            Target(
                "defaults",
                served,
                shipped_db,
                shipped_dsn,
                servers.server_pids(served),
                True,
                True,
            )
        )
    if options.baseline:
        tree = stack.enter_context(baseline_tree(options.baseline))
        base_db = f"bench_claims_baseline_{suffix}"
        base_url = servers.prepare_ours(options.pg_url, base_db, tree=tree)
        created.append(base_db)
        base_dsn = servers.server_dsn(options.pg_url, base_db)
        asyncio.run(data.load(base_dsn, dataset, data.OURS))
        served = stack.enter_context(
            servers.ours_server(base_url, work / "baseline.log", workers=options.workers, tree=tree)
        )
        targets.append(
            Target(
                "baseline",
                served,
                base_db,
                base_dsn,
                servers.server_pids(served),
                True,
                True,
            )
        )
    if options.upstream:
        bin_dir = servers.ensure_upstream_venv(options.upstream_venv.resolve())
        version = servers.upstream_version(bin_dir)
        config = work / "upstream-config"
        servers.prepare_upstream(bin_dir, options.pg_url, upstream_db, config)
        created.append(upstream_db)
        upstream_url = stack.enter_context(
            servers.upstream_server(
                bin_dir,
                config,
                work / "upstream.log",
                request_timeout=60,
                processes=options.workers,
            )
        )
        up_dsn = servers.server_dsn(options.pg_url, upstream_db)
        asyncio.run(data.load(up_dsn, dataset, data.UPSTREAM))
        targets.append(
            Target(
                "upstream",
                upstream_url,
                upstream_db,
                up_dsn,
                servers.server_pids(upstream_url),
                False,
                False,
            )
        )
    floor = None
    if "floor" in options.sections:
        floor_url = stack.enter_context(
            claims_floor.empty_endpoint_server(work / "floor.log", options.workers)
        )
        pids = servers.server_pids(floor_url)
        floor = Target(report.FLOOR, floor_url, "", "", pids, True, False)
    return targets, floor, version
