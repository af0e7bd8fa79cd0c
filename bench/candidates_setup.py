"""The candidates benchmark's options, and one size's start-up: its databases
loaded (or kept) and its servers up (ours, as shipped, upstream)."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import candidates_data as data
import candidates_servers as servers
from candidates_queries import Query, queries


@dataclass
class Options:
    sizes: list[int]
    variants: list[str]
    reps: int
    rounds: int
    block_s: float
    budget_s: float
    upstream: bool
    defaults: bool
    upstream_timeout: int
    keep_databases: bool
    unlimited_up_to: int
    admin_dsn: str
    out_dir: Path


@dataclass
class Served:
    """One size's servers, up: base URL by server name ("ours", "defaults",
    "upstream"), and the queries asked of them."""

    hosts: int
    plan: list[Query]
    urls: dict[str, str]
    databases: list[str]


def serve(
    options: Options, variant: str, hosts: int, upstream_bin: Path | None, stack: ExitStack
) -> Served:
    """Load (or keep) the size's databases and start its servers on ``stack``."""
    dataset = data.generate(hosts, nested=variant == "nested")
    work = options.out_dir / f"candidates-{variant}-{hosts}"
    work.mkdir(parents=True, exist_ok=True)
    ours_db, upstream_db = (
        f"bench_ac_ours_{variant}_{hosts}",
        f"bench_ac_upstream_{variant}_{hosts}",
    )
    ours_kept = _kept(options, ours_db, dataset)
    url = servers.prepare_ours(options.admin_dsn, ours_db, keep=ours_kept)
    if not ours_kept:
        asyncio.run(data.load(servers.server_dsn(options.admin_dsn, ours_db), dataset, data.OURS))
    plan = [
        query
        for query in queries(variant, dataset)
        if "limit=" in query.path or hosts <= options.unlimited_up_to
    ]
    served = Served(hosts, plan, {}, [ours_db])
    served.urls["ours"] = stack.enter_context(servers.ours_server(url, work / "ours.log"))
    if options.defaults:
        served.urls["defaults"] = stack.enter_context(
            servers.ours_server(url, work / "ours-defaults.log", log_level=None)
        )
    if upstream_bin is not None:
        config = work / "upstream-config"
        upstream_kept = _kept(options, upstream_db, dataset)
        servers.prepare_upstream(
            upstream_bin, options.admin_dsn, upstream_db, config, keep=upstream_kept
        )
        served.databases.append(upstream_db)
        served.urls["upstream"] = stack.enter_context(
            servers.upstream_server(
                upstream_bin,
                config,
                work / "upstream.log",
                request_timeout=options.upstream_timeout,
            )
        )
        if not upstream_kept:
            upstream_dsn = servers.server_dsn(options.admin_dsn, upstream_db)
            asyncio.run(data.load(upstream_dsn, dataset, data.UPSTREAM))
    return served


def _kept(options: Options, database: str, dataset: data.Dataset) -> bool:
    """Whether ``database`` is kept from an earlier run with the same data
    (``--keep-databases``): loading 100,000 hosts takes minutes. Only the
    provider count is checked, and data.generate is seeded."""
    if not options.keep_databases:
        return False
    count = asyncio.run(servers.provider_count(options.admin_dsn, database))
    return bool(count == len(dataset.providers))
