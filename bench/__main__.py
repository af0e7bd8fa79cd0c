"""``make bench``: every benchmark of the project, one after the other.

    python -m bench                 # every one: candidates, import, ..., capacity, heartbeats
    python -m bench candidates ...  # one benchmark, with its own arguments
    python -m bench scheduler --help
    python -m bench change-feed     # claims/s before and after the change feed
    python -m bench claims --quick  # PUT/POST /allocations, reads, the floor, the last-room race
    python -m bench capacity        # capacity reports, 10,000 hosts x 5 flavors
    python -m bench heartbeats      # what 10,000 hosts' heartbeats cost the API and PostgreSQL
    python -m bench standby-reads   # the primary's CPU per read, alone and with a standby reading
    python -m bench abuse --quick   # candidate explosions and thousands of feed watchers
    python -m bench scale --quick   # candidates at 1,000 to 100,000 hosts, memory, size, claims

Each benchmark is a script of its own; this only runs them in order and
stops at the first that fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS: dict[str, list[str]] = {
    "candidates": [str(HERE / "candidates_bench.py")],
    "import": [str(HERE / "import_bench.py")],
    "scheduler": [
        str(HERE / "scheduler_bench.py"),
        "--backend=postgresql",
        "--hosts=1000,5000",
        "--schedulers=1,4,64",
        "--instances=2000",
        "--per-request=1,10",
        "--shared",
        "--separate-up-to=4",
        "--host-vcpus=8",
        "--cache=timer,feed",
    ],
    "keystone": [str(HERE / "keystone_bench.py")],
    "writers": [str(HERE / "writers_bench.py")],
    "change-feed": [str(HERE / "change_feed_bench.py")],
    "claims": [str(HERE / "claims_bench.py")],
    "capacity": [str(HERE / "capacity_bench.py")],
    "heartbeats": [str(HERE / "heartbeat_bench.py")],
    "standby-reads": [str(HERE / "standby_reads_bench.py")],
    "abuse": [str(HERE / "abuse_bench.py")],
    "scale": [str(HERE / "scale_bench.py")],
}


def main(argv: list[str]) -> int:
    if argv and argv[0] not in BENCHMARKS:
        print(f"usage: python -m bench [{'|'.join(BENCHMARKS)} [ARGS...]]", file=sys.stderr)
        return 2
    chosen, extra = (argv[:1], argv[1:]) if argv else (list(BENCHMARKS), [])
    for name in chosen:
        print(f"== bench: {name}", flush=True)
        result = subprocess.run([sys.executable, *BENCHMARKS[name], *extra], check=False)
        if result.returncode != 0:
            return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
