"""GET /allocation_candidates benchmark: ours against upstream OpenStack Placement.

For each variant (flat compute nodes; nested NUMA hosts with shared disk) and
each size N, the same generated data is loaded with COPY into two PostgreSQL
databases: one for our server (uvicorn) and one for upstream Placement (the
``openstack-placement`` package from PyPI, in its own venv under
var/upstream-venv, served by uWSGI). Then the same queries are sent to
both, one request at a time over HTTP, query by query, the servers taking
turns (both are up at once, so that the machine's drift over a run weighs
on both alike), and p50/p95 latencies are reported with the ratio
upstream/ours.

Ours is also served as shipped ("defaults": ``info``, an access log line
per request) and timed beside it (``--no-defaults`` leaves it out).
``--keep-databases`` keeps the loaded databases and reuses them next time
(100,000 hosts take a minute or two to load).

    python bench/candidates_bench.py                 # N=1000 and 10,000, both variants
    python bench/candidates_bench.py --quick         # N=1000, 5 requests per query
    python bench/candidates_bench.py --no-upstream --sizes 200 --reps 5 --rounds 1
    python bench/candidates_bench.py --no-upstream --sizes 100000 --keep-databases

Results: var/bench/candidates-<time>.json and .md (and printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import candidates_servers as servers
from candidates_queries import VERSION, Query
from candidates_setup import Options, Served, serve
from candidates_timing import QueryResult, Series, SizeFacts, Timing, markdown, measure


def _client(base_url: str, timeout: float) -> httpx.Client:
    # A fresh connection per request: uWSGI's http-socket does not keep connections alive.
    return httpx.Client(
        base_url=base_url,
        headers={**servers.HEADERS, **VERSION},
        timeout=timeout,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def run_sizes(
    options: Options,
    variant: str,
    sizes: list[int],
    upstream_bin: Path | None,
    facts: list[SizeFacts] | None = None,
    upstream_up_to: int | None = None,
) -> list[QueryResult]:
    """Every size's servers up at once (upstream's only up to
    ``upstream_up_to`` hosts), each query timed on each in turn, so that the
    machine's drift weighs on every size and server alike. ``facts``: where
    to add each size's ``SizeFacts``."""
    results: list[QueryResult] = []
    per_block = -(-options.reps // options.rounds)
    with ExitStack() as stack:
        everything = [
            serve(
                options,
                variant,
                hosts,
                upstream_bin if upstream_up_to is None or hosts <= upstream_up_to else None,
                stack,
            )
            for hosts in sizes
        ]
        names = list(dict.fromkeys(query.name for one in everything for query in one.plan))
        for name in names:
            turns: list[tuple[Served, Query, list[Series]]] = []
            for one in everything:
                query = next((q for q in one.plan if q.name == name), None)
                if query is None:
                    continue
                series = [
                    Series(
                        stack.enter_context(
                            _client(
                                url, options.upstream_timeout + 10 if server == "upstream" else 120
                            )
                        ),
                        server,
                        query.path,
                        per_block=per_block,
                        block_s=options.block_s,
                        budget_s=options.budget_s,
                    )
                    for server, url in one.urls.items()
                ]
                turns.append((one, query, series))
            measure([one for _, _, series in turns for one in series], options.rounds)
            for one, query, series in turns:
                timings = {s.timing.server: s.timing for s in series}
                results.append(
                    QueryResult(
                        variant,
                        one.hosts,
                        query.name,
                        query.path,
                        timings["ours"],
                        timings.get("upstream"),
                        timings.get("defaults"),
                    )
                )
                for s in series:
                    print(
                        f"  N={one.hosts:<7} {s.timing.server:8s} {query.name:45s} "
                        f"{_fmt(s.timing)}",
                        flush=True,
                    )
        for one in everything:
            if facts is None:
                break
            rss = servers.largest_rss_bytes(servers.server_pids(one.urls["ours"]))
            size = asyncio.run(servers.database_bytes(options.admin_dsn, one.databases[0]))
            facts.append(SizeFacts(variant, one.hosts, rss / 2**20, size / 2**20))
    if not options.keep_databases:
        for one in everything:
            for database in one.databases:
                asyncio.run(servers.drop_database(options.admin_dsn, database))
    return results


def _fmt(timing: Timing) -> str:
    if timing.error:
        return f"error: {timing.error}"
    return f"p50 {timing.p50:9.1f} ms  p95 {timing.p95:9.1f} ms  n={timing.candidates}"


def parse_args() -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated host counts")
    parser.add_argument("--quick", action="store_true", help="N=1000 only, 5 requests per query")
    parser.add_argument("--variants", default="flat,nested")
    parser.add_argument(
        "--reps", type=int, default=20, help="timed requests per query and server, at least"
    )
    parser.add_argument("--rounds", type=int, default=5, help="turns each server takes per query")
    parser.add_argument(
        "--block-seconds",
        dest="block_s",
        type=float,
        default=1.0,
        help="each turn lasts at least this long (a fast server sends more requests)",
    )
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per query and server")
    parser.add_argument("--no-upstream", dest="upstream", action="store_false")
    parser.add_argument(
        "--no-defaults",
        dest="defaults",
        action="store_false",
        help="leave out ours as shipped (access log on), timed beside ours at --log-level warning",
    )
    parser.add_argument("--upstream-timeout", type=int, default=120, help="seconds per request")
    parser.add_argument(
        "--keep-databases",
        action="store_true",
        help="keep the loaded databases after the run, and reuse those an earlier such run kept",
    )
    parser.add_argument(
        "--unlimited-up-to",
        type=int,
        default=10_000,
        help="queries without a limit only up to this many hosts (100,000 hosts' take seconds)",
    )
    servers.add_pg_url_option(parser)
    parser.add_argument("--out-dir", type=Path, default=servers.ROOT / "var" / "bench")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.reps, args.rounds, args.budget = "1000", 5, 1, 15.0
    return Options(
        sizes=[int(size) for size in args.sizes.split(",")],
        variants=args.variants.split(","),
        reps=args.reps,
        rounds=args.rounds,
        block_s=args.block_s,
        budget_s=args.budget,
        upstream=args.upstream,
        defaults=args.defaults,
        upstream_timeout=args.upstream_timeout,
        keep_databases=args.keep_databases,
        unlimited_up_to=args.unlimited_up_to,
        admin_dsn=args.pg_url,
        out_dir=args.out_dir,
    )


def main() -> None:
    options = parse_args()
    options.out_dir.mkdir(parents=True, exist_ok=True)
    upstream_bin, version = None, None
    if options.upstream:
        upstream_bin = servers.ensure_upstream_venv()
        version = servers.upstream_version(upstream_bin)
    results: list[QueryResult] = []
    for hosts in options.sizes:
        for variant in options.variants:
            print(f"{variant}, N={hosts}", flush=True)
            results += run_sizes(options, variant, [hosts], upstream_bin)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = markdown(results, version)
    (options.out_dir / f"candidates-{stamp}.md").write_text(report)
    (options.out_dir / f"candidates-{stamp}.json").write_text(
        json.dumps(
            [asdict(r) | {"ratio": r.ratio, "defaults_ratio": r.defaults_ratio} for r in results],
            indent=2,
        )
    )
    print(report)


if __name__ == "__main__":
    main()
