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
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import candidates_data as data
import candidates_servers as servers

VERSION = {"openstack-api-version": "placement 1.39"}
FLAVOR = "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40"
WIDE = "&".join(f"resources{i}=PCI_DEVICE:1" for i in range(1, 9)) + "&group_policy=isolate"


@dataclass(frozen=True)
class Query:
    name: str
    path: str


def queries(variant: str, dataset: data.Dataset) -> list[Query]:
    aggregate = dataset.aggregates[0]
    ac = "/allocation_candidates?"
    if variant == "flat":
        return [
            Query("flat, limit 1000", f"{ac}{FLAVOR}&limit=1000"),
            Query(
                "flat + AVX512F, limit 1000", f"{ac}{FLAVOR}&required=HW_CPU_X86_AVX512F&limit=1000"
            ),
            Query("flat + member_of, limit 1000", f"{ac}{FLAVOR}&member_of={aggregate}&limit=1000"),
            Query(
                "flat + member_of + !CUSTOM_GPU, limit 1000",
                f"{ac}{FLAVOR}&member_of={aggregate}&required=!CUSTOM_GPU&limit=1000",
            ),
            Query(
                "flat big flavor + CUSTOM_GPU, limit 1000",
                f"{ac}resources=VCPU:16,MEMORY_MB:65536,DISK_GB:500&required=CUSTOM_GPU&limit=1000",
            ),
            Query("flat, no limit", f"{ac}{FLAVOR}"),
        ]
    return [
        Query("nested + shared disk, limit 1000", f"{ac}{FLAVOR}&limit=1000"),
        Query("nested + member_of, limit 1000", f"{ac}{FLAVOR}&member_of={aggregate}&limit=1000"),
        Query(
            "nested NUMA group + disk group, limit 1000",
            f"{ac}resources_NUMA=VCPU:2,MEMORY_MB:4096&resources_DISK=DISK_GB:40"
            "&group_policy=none&limit=1000",
        ),
        Query(
            "nested 2 NUMA isolated + disk, limit 1000",
            f"{ac}resources=DISK_GB:20&resources1=VCPU:1,MEMORY_MB:1024"
            "&resources2=VCPU:1,MEMORY_MB:1024&group_policy=isolate&limit=1000",
        ),
        Query("nested + shared disk, no limit", f"{ac}{FLAVOR}"),
        Query("wide host, 8 groups isolate, limit 1000", f"{ac}{WIDE}&limit=1000"),
    ]  # fmt: skip


@dataclass
class Timing:
    server: str
    samples_ms: list[float] = field(default_factory=list)
    candidates: int | None = None
    error: str | None = None

    @property
    def p50(self) -> float | None:
        return statistics.median(self.samples_ms) if self.samples_ms else None

    @property
    def p95(self) -> float | None:
        if len(self.samples_ms) < 2:
            return self.p50
        return statistics.quantiles(self.samples_ms, n=20, method="inclusive")[18]


@dataclass
class QueryResult:
    variant: str
    hosts: int
    query: str
    path: str
    ours: Timing
    upstream: Timing | None
    # Ours as shipped (access log on), beside ``ours`` at --log-level warning.
    defaults: Timing | None = None

    @property
    def ratio(self) -> float | None:
        if self.upstream is None or self.upstream.p50 is None or not self.ours.p50:
            return None
        return self.upstream.p50 / self.ours.p50

    @property
    def defaults_ratio(self) -> float | None:
        if self.defaults is None or self.defaults.p50 is None or not self.ours.p50:
            return None
        return self.defaults.p50 / self.ours.p50


@dataclass(frozen=True)
class SizeFacts:
    """What one variant and size cost besides time: the API worker's
    resident memory once its queries ran, and the database's size."""

    variant: str
    hosts: int
    api_rss_mb: float
    database_mb: float


class Series:
    """One server's requests for one query, taken in blocks (see ``measure``):
    in each, one request to warm up, then timed ones, at least ``per_block``
    and for at least ``block_s`` seconds. The series ends after ``budget_s``
    seconds, or at once on an error; a request slower than a third of the
    budget counts even as a warm-up."""

    def __init__(
        self,
        client: httpx.Client,
        server: str,
        path: str,
        *,
        per_block: int,
        block_s: float,
        budget_s: float,
    ) -> None:
        self.client, self.path = client, path
        self.per_block, self.block_s, self.budget_s = per_block, block_s, budget_s
        self.timing = Timing(server)
        self.spent_s = 0.0

    def done(self) -> bool:
        if self.timing.error is not None:
            return True
        return self.spent_s > self.budget_s and bool(self.timing.samples_ms)

    def block(self) -> None:
        began, timed = time.monotonic(), 0
        if self._request(warm_up=True):
            while True:
                elapsed = time.monotonic() - began
                if self.spent_s + elapsed > self.budget_s and self.timing.samples_ms:
                    break
                if timed >= self.per_block and elapsed >= self.block_s:
                    break
                if not self._request(warm_up=False):
                    break
                timed += 1
        self.spent_s += time.monotonic() - began

    def _request(self, *, warm_up: bool) -> bool:
        """Send one request; False when the block must end (an error, or a
        warm-up so slow that it counted)."""
        begin = time.perf_counter()
        try:
            response = self.client.get(self.path)
        except httpx.HTTPError as exc:
            self.timing.error = f"{type(exc).__name__} after {time.perf_counter() - begin:.0f} s"
            return False
        elapsed_ms = (time.perf_counter() - begin) * 1000
        if response.status_code != 200:
            self.timing.error = f"HTTP {response.status_code}: {response.text[:200]}"
            return False
        self.timing.candidates = len(response.json()["allocation_requests"])
        slow = elapsed_ms > self.budget_s * 1000 / 3
        if not warm_up or slow:
            self.timing.samples_ms.append(elapsed_ms)
        return not (warm_up and slow)


def measure(series: list[Series], rounds: int) -> None:
    """The servers take turns, a block each, ``rounds`` times: the machine's
    speed drifts over minutes, and each server is sampled across the same
    stretch of time. Within a block a server runs warm, as one busy with
    such requests is; after each turn the other server's work has left the
    caches cold, hence a warm-up first."""
    for _ in range(rounds):
        for one in series:
            if not one.done():
                one.block()


def _client(base_url: str, timeout: float) -> httpx.Client:
    # A fresh connection per request: uWSGI's http-socket does not keep connections alive.
    return httpx.Client(
        base_url=base_url,
        headers={**servers.HEADERS, **VERSION},
        timeout=timeout,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


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


def _serve(
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
            _serve(
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


def _kept(options: Options, database: str, dataset: data.Dataset) -> bool:
    """Whether ``database`` is kept from an earlier run with the same data
    (``--keep-databases``): loading 100,000 hosts takes minutes. Only the
    provider count is checked, and data.generate is seeded."""
    if not options.keep_databases:
        return False
    count = asyncio.run(servers.provider_count(options.admin_dsn, database))
    return bool(count == len(dataset.providers))


def _fmt(timing: Timing) -> str:
    if timing.error:
        return f"error: {timing.error}"
    return f"p50 {timing.p50:9.1f} ms  p95 {timing.p95:9.1f} ms  n={timing.candidates}"


def _cell(value: float | None, error: str | None = None, suffix: str = "") -> str:
    if error:
        return error[:60]
    return "-" if value is None else f"{value:.1f}{suffix}"


def markdown(results: list[QueryResult], upstream_version: str | None) -> str:
    lines = [
        "| variant | N | query | ours p50 ms | ours p95 ms | upstream p50 ms | upstream p95 ms "
        "| upstream/ours (p50) | defaults p50 ms | defaults/ours (p50) "
        "| candidates (ours/upstream) | requests timed (ours/upstream) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        up, shipped = r.upstream, r.defaults
        lines.append(
            f"| {r.variant} | {r.hosts} | {r.query} | {_cell(r.ours.p50, r.ours.error)} "
            f"| {_cell(r.ours.p95)} | {_cell(up.p50 if up else None, up.error if up else None)} "
            f"| {_cell(up.p95 if up else None)} | {_cell(r.ratio, suffix='x')} "
            f"| {_cell(shipped.p50 if shipped else None, shipped.error if shipped else None)} "
            f"| {_cell(r.defaults_ratio, suffix='x')} "
            f"| {r.ours.candidates}/{up.candidates if up else '-'} "
            f"| {len(r.ours.samples_ms)}/{len(up.samples_ms) if up else '-'} |"
        )
    header = (
        f"Upstream: openstack-placement {upstream_version} on uWSGI.\n\n"
        if upstream_version
        else ""
    )
    return header + "\n".join(lines) + "\n"


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
