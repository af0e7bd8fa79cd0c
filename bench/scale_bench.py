"""The scale section of ``make bench``: the candidates benchmark's queries at
N = 1,000, 10,000 and 100,000 hosts (flat and nested), p50/p95 per query
and N, the API worker's memory and the database's size at each N, and the
claims rate at 64 clients of ours as shipped (access log on) beside ours at
``--log-level warning`` and upstream; then issue #29's goals, met or not.

Every size's servers are up at once (ours, ours as shipped, upstream) and
take turns on each query, so that the machine's drift weighs on every size
alike: the growth from 10,000 to 100,000 hosts is measured across the same
minutes. Upstream answers the filtered queries of 100,000 hosts in seconds
each, so it is timed up to ``--upstream-up-to`` hosts (10,000); queries without a
limit run up to 10,000 hosts too (100,000 hosts' take seconds and measure
the response's size). Loading 100,000 hosts takes a minute or two:
``--keep-databases`` keeps what a run loaded and reuses it the next time.

    python bench/scale_bench.py                    # everything, one run (long)
    python bench/scale_bench.py --quick            # ours only, one short turn per query, no claims
    python bench/scale_bench.py --sizes 10000,100000 --variants flat --no-claims --keep-databases

Results: var/bench/scale-<time>.md and .json (and printed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import candidates_bench as candidates
import candidates_servers as servers
from candidates_setup import Options
from candidates_timing import QueryResult, SizeFacts

HERE = Path(__file__).resolve().parent
# Issue #29's goals.
GROWTH = 1.5  # p50 at 100,000 hosts against the same query's at 10,000
CEILING_MS = {"flat": 40.0, "nested": 80.0}  # p50 at 100,000 hosts
UPSTREAM_FACTOR = 30.0  # at 10,000 hosts, every query
DEFAULTS_MARGIN = 0.10  # as shipped against --log-level warning


@dataclass(frozen=True)
class ClaimsFigure:
    server: str
    per_second: float
    server_cpu_ms: float
    postgresql_cpu_ms: float


def _candidates(
    args: argparse.Namespace,
) -> tuple[list[QueryResult], list[SizeFacts]]:
    options = Options(
        sizes=args.sizes,
        variants=args.variants,
        reps=args.reps,
        rounds=args.rounds,
        block_s=args.block_seconds,
        budget_s=args.budget,
        upstream=False,
        defaults=args.defaults,
        upstream_timeout=args.upstream_timeout,
        keep_databases=args.keep_databases,
        unlimited_up_to=args.unlimited_up_to,
        admin_dsn=args.pg_url,
        out_dir=args.out_dir,
    )
    upstream_bin = servers.ensure_upstream_venv() if args.upstream_up_to > 0 else None
    results: list[QueryResult] = []
    facts: list[SizeFacts] = []
    for variant in args.variants:
        print(variant, flush=True)
        with_upstream = replace(options, upstream=upstream_bin is not None)
        results += candidates.run_sizes(
            with_upstream, variant, args.sizes, upstream_bin, facts, args.upstream_up_to
        )
    return results, facts


def _claims(args: argparse.Namespace) -> list[ClaimsFigure]:
    """The claims benchmark's PUT section at 64 clients: ours, ours as
    shipped, upstream, taking turns (bench/claims_bench.py)."""
    with tempfile.TemporaryDirectory(dir=args.out_dir) as out:
        command = [sys.executable, str(HERE / "claims_bench.py"), "--sections", "put"]
        command += ["--put-clients", "64", "--out-dir", out, "--pg-url", args.pg_url]
        if args.quick:
            command.append("--quick")
        subprocess.run(command, check=True)
        (found,) = Path(out).glob("claims-*.json")
        summaries = json.loads(found.read_text())
    return [
        ClaimsFigure(s["server"], s["per_second"], s["server_cpu_ms"], s["postgresql_cpu_ms"])
        for s in summaries
        if str(s.get("section", "")).startswith("PUT")
    ]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _queries_table(results: list[QueryResult]) -> list[str]:
    lines = [
        "| variant | query | N | p50 ms | p95 ms | as shipped p50 ms | upstream p50 ms "
        "| upstream / ours |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(results, key=lambda r: (r.variant, r.query, r.hosts)):
        shipped = r.defaults.p50 if r.defaults else None
        upstream = _ms(r.upstream.p50) if r.upstream else "-"
        if r.upstream and r.upstream.error:
            upstream = r.upstream.error[:40]
        ratio = "-" if r.ratio is None else f"{r.ratio:.1f}x"
        ours = r.ours.error[:40] if r.ours.error else _ms(r.ours.p50)
        lines.append(
            f"| {r.variant} | {r.query} | {r.hosts:,} | {ours} | {_ms(r.ours.p95)} "
            f"| {_ms(shipped)} | {upstream} | {ratio} |"
        )
    return lines


def _facts_table(facts: list[SizeFacts]) -> list[str]:
    lines = [
        "| variant | N | API worker RSS MB | database MB |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {f.variant} | {f.hosts:,} | {f.api_rss_mb:.0f} | {f.database_mb:.0f} |" for f in facts
    ]
    return lines


def _claims_table(figures: list[ClaimsFigure]) -> list[str]:
    lines = [
        "| PUT /allocations, 64 clients | claims/s | server CPU ms per claim "
        "| PostgreSQL CPU ms per claim |",
        "|---|---:|---:|---:|",
    ]
    names = {"ours": "ours, --log-level warning", "defaults": "ours as shipped"}
    lines += [
        f"| {names.get(f.server, f.server)} | {f.per_second:,.0f} | {f.server_cpu_ms:.2f} "
        f"| {f.postgresql_cpu_ms:.2f} |"
        for f in figures
    ]
    return lines


def _goal(met: bool, text: str) -> str:
    return f"- {'met' if met else '**not met**'}: {text}"


def goals(results: list[QueryResult], claims: list[ClaimsFigure]) -> list[str]:
    """Issue #29's goals, each met or not, from this run's figures."""
    lines: list[str] = []
    by_key = {(r.variant, r.query, r.hosts): r for r in results}
    for r in results:
        p50 = r.ours.p50
        if r.hosts == 100_000 and "limit=1000" in r.path and p50 is not None:
            smaller = by_key.get((r.variant, r.query, 10_000))
            if smaller is not None and smaller.ours.p50:
                growth = p50 / smaller.ours.p50
                lines.append(
                    _goal(
                        growth <= GROWTH,
                        f"{r.variant} {r.query}: 100,000 hosts {p50:.1f} ms "
                        f"= {growth:.2f}x 10,000 hosts' (at most {GROWTH}x)",
                    )
                )
            ceiling = CEILING_MS[r.variant]
            lines.append(
                _goal(
                    p50 <= ceiling,
                    f"{r.variant} {r.query}: {p50:.1f} ms p50 at 100,000 hosts "
                    f"(at most {ceiling:.0f})",
                )
            )
        if r.hosts == 10_000 and r.ratio is not None:
            lines.append(
                _goal(
                    r.ratio >= UPSTREAM_FACTOR,
                    f"{r.variant} {r.query}: {r.ratio:.1f}x upstream at 10,000 hosts "
                    f"(at least {UPSTREAM_FACTOR:.0f}x)",
                )
            )
        if r.defaults_ratio is not None:
            lines.append(
                _goal(
                    r.defaults_ratio <= 1 + DEFAULTS_MARGIN,
                    f"{r.variant} {r.query}, {r.hosts:,} hosts: as shipped "
                    f"{r.defaults_ratio:.2f}x the p50 at --log-level warning",
                )
            )
    figures = {f.server: f for f in claims}
    if "ours" in figures and "defaults" in figures:
        quiet, shipped = figures["ours"], figures["defaults"]
        rate = shipped.per_second / quiet.per_second
        cpu = shipped.server_cpu_ms / quiet.server_cpu_ms
        lines.append(
            _goal(
                rate >= 1 - DEFAULTS_MARGIN and cpu <= 1 + DEFAULTS_MARGIN,
                f"claims as shipped: {rate:.2f}x the claims/s and {cpu:.2f}x the server "
                "CPU per claim at --log-level warning",
            )
        )
    return lines


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--variants", default="flat,nested")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block-seconds", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--upstream-up-to", type=int, default=10_000)
    parser.add_argument("--upstream-timeout", type=int, default=120)
    parser.add_argument("--unlimited-up-to", type=int, default=10_000)
    parser.add_argument("--no-defaults", dest="defaults", action="store_false")
    parser.add_argument("--no-claims", dest="claims", action="store_false")
    parser.add_argument("--keep-databases", action="store_true")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="ours only (as shipped too), one turn of 5 requests per query, no claims",
    )
    servers.add_pg_url_option(parser)
    parser.add_argument("--out-dir", type=Path, default=servers.ROOT / "var" / "bench")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.rounds, args.budget, args.block_seconds = 5, 1, 10.0, 0.2
        args.upstream_up_to, args.claims = 0, False
    args.sizes = [int(size) for size in args.sizes.split(",")]
    args.variants = args.variants.split(",")
    return args


def main() -> None:
    args = parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    results, facts = _candidates(args)
    claims = _claims(args) if args.claims else []
    report = [
        f"Scale: {', '.join(args.variants)} at N = {', '.join(f'{n:,}' for n in args.sizes)}; "
        f"upstream up to {args.upstream_up_to:,} hosts.",
        "",
        *_queries_table(results),
        "",
        *_facts_table(facts),
        "",
    ]
    if claims:
        report += [*_claims_table(claims), ""]
    report += ["Goals (issue #29):", "", *goals(results, claims)]
    text = "\n".join(report) + "\n"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out_dir / f"scale-{stamp}.md").write_text(text)
    (args.out_dir / f"scale-{stamp}.json").write_text(
        json.dumps(
            {
                "queries": [asdict(r) for r in results],
                "sizes": [asdict(f) for f in facts],
                "claims": [asdict(c) for c in claims],
            },
            indent=2,
        )
    )
    print(text)


if __name__ == "__main__":
    main()
