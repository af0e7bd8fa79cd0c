"""What a hostile or careless client can make the API spend (issue #30).

    python -m bench abuse            # the figures of docs/performance-abuse.md
    python -m bench abuse --quick    # fewer watchers and streams: under 2 minutes

PostgreSQL. Two sections, each printed as a table with its goals:

1. candidates abuse (one worker, so every request shares it): a host of 16
   children and G granular groups any child can serve, ``group_policy=none``
   and no ``limit`` (16**G combinations), for G = 5, 6 and 8, while clients
   send ordinary requests to the same worker. Goals: the answer stops at
   ``max_allocation_candidates``; the worker's peak memory grows by at most
   256 MB; ordinary requests keep a p99 under 1 s.
2. watchers (two workers): long-polls (``GET /changes?wait=60``, each
   re-sent as soon as it is answered) and event streams, while clients send
   ordinary GETs and one write a second is made. Goals: an ordinary GET's
   p99 under 200 ms; every write delivered to every watcher within 2 s;
   reads of the ``changes`` table per write the same with few watchers as
   with many. Then streams whose clients never read, while writes go on:
   what each costs the workers (goal: at most 64 KB).

The load generator shares the machine with the server and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.abuse_candidates import candidates_section
from bench.abuse_watchers import watchers_section
from bench.scheduler_bench_infra import placement


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer watchers: under 2 minutes")
    parser.add_argument("--only", choices=("candidates", "watchers"), help="one section")
    parser.add_argument("--groups", type=lambda s: [int(g) for g in s.split(",")], default=None)
    parser.add_argument("--clients", type=int, default=4, help="ordinary clients")
    parser.add_argument("--long-polls", type=int, default=None)
    parser.add_argument("--streams", type=int, default=None)
    parser.add_argument("--writes", type=int, default=None)
    parser.add_argument("--stalled", type=int, default=None)
    parser.add_argument("--stalled-writes", type=int, default=None)
    options = parser.parse_args()
    quick = options.quick
    defaults = {
        "groups": [5, 6, 8],
        "long_polls": 1000 if quick else 5000,
        "streams": 200 if quick else 1000,
        "writes": 2 if quick else 5,
        "stalled": 100 if quick else 300,
        "stalled_writes": 300 if quick else 1000,
    }
    for name, value in defaults.items():
        if getattr(options, name) is None:
            setattr(options, name, value)
    return options


def main() -> None:
    options = parse_args()
    with tempfile.TemporaryDirectory(prefix="abuse-bench-") as scratch:
        if options.only in (None, "candidates"):
            with placement("postgresql", Path(scratch), 1) as server:
                asyncio.run(candidates_section(server, options))
        if options.only in (None, "watchers"):
            with placement("postgresql", Path(scratch), 2) as server:
                asyncio.run(watchers_section(server, options))


if __name__ == "__main__":
    main()
