"""Claims: ours against upstream OpenStack Placement, both on PostgreSQL.

The candidates benchmark's flat data (1,000 hosts by default, loaded with
COPY into two databases) is served by ours (``placement-api serve --workers
2``) and by upstream Placement (``openstack-placement`` 16.0.0, uWSGI, two
processes), both up at once. Each section sends the same load to one, then
the other, in turns of ``--block-seconds`` (``--rounds`` turns each), so the
machine's drift weighs on both alike:

- reads every client makes: ``GET /resource_providers/{u}/inventories``,
  ``GET /allocations/{consumer}``, ``GET /resource_providers?in_tree={u}``;
- ``PUT /allocations/{new consumer}`` from 8 and from 64 concurrent clients,
  one claim (VCPU:1, MEMORY_MB:256, DISK_GB:1) on a random host each;
- ``POST /allocations`` with 50 new consumers per request;
- ``floor``: an empty endpoint loaded as ours is by the 64 PUT clients, and
  the claims/s the cores allow (``claims_floor.py``);
- ``race``: claimers racing for the last room of nearly full providers, and
  the providers each server leaves over capacity (``claims_race.py``).

Ours is served twice, on databases of its own: at ``--log-level warning``
("ours", no access log line) and as shipped ("defaults": ``info``, one
access log line per request, written to a file), so that what the defaults
cost a claim is measured beside it (``--no-defaults`` leaves it out).

Before each claims section the allocations are emptied; after it the
database is checked: no provider over capacity, usage equal to the sum of
the allocations, one consumer per claim answered 204. Printed per section
and server: rate, p50/p99, CPU per claim (or read) of the server's
processes, of its PostgreSQL sessions (those open when a turn starts) and
of this load generator, PostgreSQL sessions opened, and the ratio
ours/upstream (for latency and CPU: upstream/ours, so "x" is always how
many times better ours is).

    python bench/claims_bench.py            # 3 turns of 4 s each per section
    python bench/claims_bench.py --quick    # 1 turn of 2 s
    python bench/claims_bench.py --no-upstream --hosts 200
    python bench/claims_bench.py --no-upstream --sections put --put-clients 64
    python bench/claims_bench.py --baseline main   # and main's code beside this tree's

Results: var/bench/claims-<time>.md and .json (and printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import candidates_data as data
import candidates_servers as servers

from bench import claims_race
from bench import claims_report as report
from bench import claims_sections as sections
from bench.claims_sections import HEADERS
from bench.claims_targets import start
from placement_api.settings import Settings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument(
        "--sections",
        default="reads,put,floor,post,race",
        help="comma-separated sections to run, of: reads, put, floor (an empty endpoint "
        "loaded as the PUT sections load ours: bench/claims_floor.py), post, race (claimers "
        "racing for the last room: bench/claims_race.py)",
    )
    parser.add_argument("--race-rounds", type=int, default=20)
    parser.add_argument("--race-providers", type=int, default=3)
    parser.add_argument("--race-clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="processes of each server")
    parser.add_argument("--put-clients", default="8,64", help="comma-separated client counts")
    parser.add_argument("--post-clients", type=int, default=4)
    parser.add_argument("--per-post", type=int, default=50, help="consumers per POST")
    parser.add_argument("--read-clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="turns each server takes")
    parser.add_argument("--block-seconds", type=float, default=4.0)
    parser.add_argument("--quick", action="store_true", help="one turn of 2 s per section")
    parser.add_argument("--no-upstream", dest="upstream", action="store_false")
    parser.add_argument(
        "--no-defaults",
        dest="defaults",
        action="store_false",
        help="leave out ours as shipped (the 'defaults' server: access log on), served beside "
        "ours at --log-level warning",
    )
    parser.add_argument(
        "--baseline",
        metavar="GIT_REF",
        help="also serve this commit of ours (the 'baseline' server), to compare before/after, "
        "on a database migrated by that commit",
    )
    parser.add_argument(
        "--upstream-venv",
        type=Path,
        default=servers.DEFAULT_VENV,
        help="where upstream Placement is installed (made on first use)",
    )
    servers.add_pg_url_option(parser)
    parser.add_argument("--out-dir", type=Path, default=servers.ROOT / "var" / "bench")
    options = parser.parse_args()
    options.put_clients = [int(part) for part in options.put_clients.split(",")]
    options.sections = set(options.sections.split(","))
    if not options.sections <= {"reads", "put", "floor", "post", "race"}:
        parser.error(f"--sections: unknown {sorted(options.sections)}")
    if options.quick:
        options.rounds, options.block_seconds = 1, 2.0
    return options


def _run(coroutine: object) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(coroutine)  # type: ignore[arg-type]
    else:
        uvloop.run(coroutine)  # type: ignore[arg-type]


def main() -> None:
    options = parse_args()
    options.out_dir.mkdir(parents=True, exist_ok=True)
    work = options.out_dir / "claims"
    work.mkdir(parents=True, exist_ok=True)
    dataset = data.generate(options.hosts, nested=False)
    created: list[str] = []
    version = None
    try:
        with ExitStack() as stack:
            targets, floor, version = start(options, dataset, work, stack, created)
            outcomes: list[report.Outcome] = []
            races: dict[str, claims_race.RaceTally] = {}

            async def measure() -> None:
                outcomes.extend(await sections.measure(options, targets, dataset, floor))
                for target in targets if "race" in options.sections else ():
                    races[target.name] = await claims_race.race(
                        target.url,
                        HEADERS,
                        target.keep_alive,
                        options.race_rounds,
                        options.race_providers,
                        options.race_clients,
                    )

            _run(measure())
    finally:
        for database in created:
            asyncio.run(servers.drop_database(options.pg_url, database))
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    baseline = f", baseline {options.baseline}" if options.baseline else ""
    header = (
        f"PostgreSQL, {options.hosts} hosts, {options.workers} processes per server "
        f"(ours {revision}{baseline}, {Settings().database_pool_size} connections per process; "
        f"upstream openstack-placement {version or '-'} on uWSGI), "
        f"{options.rounds} turns of {options.block_seconds:g} s per section and server, "
        f"load average {os.getloadavg()[0]:.1f}."
    )
    table = report.markdown(outcomes, header) if outcomes else header + "\n"
    if races:
        table += "\n" + claims_race.markdown(races, options.race_providers, options.race_clients)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (options.out_dir / f"claims-{stamp}.md").write_text(table)
    summaries = [report.summary(outcome) for outcome in outcomes]
    summaries += [tally.summary(server) for server, tally in races.items()]
    (options.out_dir / f"claims-{stamp}.json").write_text(json.dumps(summaries, indent=2))
    print(table)
    ours_overfilled = any(t.over_capacity for name, t in races.items() if name != "upstream")
    if ours_overfilled or any(outcome.verified is False for outcome in outcomes):
        sys.exit(1)


if __name__ == "__main__":
    main()
