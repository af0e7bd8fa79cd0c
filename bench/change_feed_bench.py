"""What the change feed costs the write path: claims/s before and after.

    python bench/change_feed_bench.py [--baseline HEAD] [--clients 16] [--seconds 15]

"Before" is the API at git ref ``--baseline`` checked out into a temporary
worktree with the feed's recording hook taken out (so its writes record
nothing: the same code without the feed); "after" is this tree. Each is served
by ``placement-api serve`` on a PostgreSQL database of its own, seeded with
the same providers; then concurrent clients claim (``PUT /allocations/{new
consumer}``, VCPU:1 on one provider) for a few seconds, the two servers
taking turns round after round so a busy machine hurts both alike. The
report gives claims/s and the CPU each claim cost (API processes and
database backends: steadier than claims/s on a shared machine) per round,
their medians, and the feed's cost as the median of each round's
after/before ratio. Then the feed's statement alone
(``bench/change_feed_statement.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import change_feed_statement, claims_db
from bench.candidates_servers import drop_database, recreate_database, server_dsn
from bench.scheduler_bench_infra import cpu_seconds, cpu_used, process_tree
from bench.upstream import free_port, wait_until_up

ROOT = Path(__file__).resolve().parents[1]
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
ADMIN_DSN = os.environ.get(
    "PLACEMENT_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@dataclass(frozen=True)
class Served:
    label: str
    url: str
    pid: int
    database: str


@dataclass(frozen=True)
class Round:
    claims_per_second: float
    api_cpu_ms: float  # per claim, the API's processes
    db_cpu_ms: float  # per claim, the database's backends

    @property
    def cpu_ms(self) -> float:
        return self.api_cpu_ms + self.db_cpu_ms


# How the feed's recording hook is installed, and that text without it (then
# writes record nothing): on the recording factory's sessions, or, before
# that, on every SQLAlchemy session.
RECORDING_HOOKS = (
    ("before_commit=append_pending", "before_commit=None"),
    ('@event.listens_for(Session, "before_commit")\n', ""),
)


@contextmanager
def baseline_tree(ref: str) -> Iterator[Path]:
    """A detached worktree of ``ref``, removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="placement-baseline-"))
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(directory), ref],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        yield directory
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(directory)], cwd=ROOT, check=False
        )


def without_recording(tree: Path) -> Path:
    """Take the feed's recording hook out of ``tree``: its writes record nothing."""
    recording = tree / "placement_api" / "domain" / "changes.py"
    source = recording.read_text()
    for hook, without in RECORDING_HOOKS:
        if source.count(hook) == 1:
            recording.write_text(source.replace(hook, without))
            return tree
    raise SystemExit(f"{recording}: the recording hook to take out was not found")


@contextmanager
def serve(label: str, tree: Path, workers: int) -> Iterator[Served]:
    """``placement-api serve`` from ``tree`` on a fresh database."""
    database = f"placement_bench_feed_{label}_{os.getpid()}"
    asyncio.run(recreate_database(ADMIN_DSN, database))
    url = server_dsn(ADMIN_DSN, database).replace("postgresql://", "postgresql+asyncpg://", 1)
    # The tree's own package comes first on the path (cwd), ahead of the editable install.
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url, PYTHONPATH=str(tree))
    command = [sys.executable, "-m", "placement_api"]
    subprocess.run([*command, "db", "upgrade"], cwd=tree, env=env, check=True)
    port = free_port()
    log = Path(tempfile.mkstemp(prefix=f"feed-bench-{label}-", suffix=".log")[1])
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, "serve", "--port", str(port), "--workers", str(workers)],
            cwd=tree,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base_url, process, log)
        yield Served(label, base_url, process.pid, database)
    finally:
        process.terminate()
        process.wait(timeout=30)
        asyncio.run(drop_database(ADMIN_DSN, database))


async def seed(url: str, providers: int) -> list[str]:
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        uuids = []
        for number in range(providers):
            made = await http.post("/resource_providers", json={"name": f"host-{number}"})
            made.raise_for_status()
            uuid_ = made.json()["uuid"]
            inventory = {
                "resource_provider_generation": 0,
                "inventories": {"VCPU": {"total": 10**6}},
            }
            response = await http.put(f"/resource_providers/{uuid_}/inventories", json=inventory)
            response.raise_for_status()
            uuids.append(uuid_)
        return uuids


async def claim_for(url: str, providers: list[str], clients: int, seconds: float) -> float:
    """Claims per second of ``clients`` concurrent claimers over ``seconds``."""
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60, limits=limits) as http:
        deadline = time.monotonic() + seconds
        done = 0

        async def claimer(offset: int) -> None:
            nonlocal done
            turn = offset
            while time.monotonic() < deadline:
                provider = providers[turn % len(providers)]
                turn += clients
                body = {
                    "allocations": {provider: {"resources": {"VCPU": 1}}},
                    "project_id": "bench",
                    "user_id": "bench",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                }
                response = await http.put(f"/allocations/{uuid.uuid4()}", json=body)
                if response.status_code != 204:
                    raise RuntimeError(f"claim refused: {response.status_code} {response.text}")
                done += 1

        began = time.monotonic()
        await asyncio.gather(*(claimer(offset) for offset in range(clients)))
        return done / (time.monotonic() - began)


async def measure(served: Served, providers: list[str], clients: int, seconds: float) -> Round:
    """One round: claims/s, and the CPU each claim cost the API and the database.
    CPU per claim hardly moves with the machine's load, unlike claims/s."""
    api_pids = process_tree(served.pid)
    db_pids = await claims_db.backend_pids(ADMIN_DSN, served.database)
    api_before, db_before = cpu_seconds(api_pids), cpu_seconds(db_pids)
    began = time.monotonic()
    rate = await claim_for(served.url, providers, clients, seconds)
    claims = rate * (time.monotonic() - began)
    db_pids |= await claims_db.backend_pids(ADMIN_DSN, served.database)
    api_ms = 1000 * cpu_used(api_before, cpu_seconds(api_pids)) / claims
    db_ms = 1000 * cpu_used(db_before, cpu_seconds(db_pids)) / claims
    return Round(rate, api_ms, db_ms)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", default="HEAD", help="git ref served without the feed's recording hook"
    )
    parser.add_argument("--providers", type=int, default=100)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--statement-rounds",
        type=int,
        default=6,
        help="rounds of the feed's statement measured alone (0: skip)",
    )
    return parser.parse_args()


def main() -> None:
    options = parse_args()
    # Stopped early, still remove the servers, databases and the baseline worktree.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with ExitStack() as stack:
        before_tree = without_recording(stack.enter_context(baseline_tree(options.baseline)))
        servers = [
            stack.enter_context(serve("before", before_tree, options.workers)),
            stack.enter_context(serve("after", ROOT, options.workers)),
        ]
        providers = {
            served.label: asyncio.run(seed(served.url, options.providers)) for served in servers
        }
        rounds: dict[str, list[Round]] = {served.label: [] for served in servers}
        for number in range(options.rounds):
            # Alternate which goes first, so neither always runs on a warmer machine.
            for served in servers if number % 2 == 0 else servers[::-1]:
                result = asyncio.run(
                    measure(served, providers[served.label], options.clients, options.seconds)
                )
                rounds[served.label].append(result)
                print(
                    f"round {number + 1} {served.label:6} {result.claims_per_second:8.1f} "
                    f"claims/s, CPU ms/claim API {result.api_cpu_ms:.2f} DB {result.db_cpu_ms:.2f}",
                    flush=True,
                )
    report(options, rounds)
    if options.statement_rounds:
        asyncio.run(change_feed_statement.measure(ADMIN_DSN, options.statement_rounds))


def report(options: argparse.Namespace, rounds: dict[str, list[Round]]) -> None:
    # Rounds next to each other in time share the machine's load: their ratio
    # is steadier than either rate on a busy machine.
    pairs = list(zip(rounds["before"], rounds["after"], strict=True))
    rate_ratio = statistics.median(a.claims_per_second / b.claims_per_second for b, a in pairs)
    cpu_ratio = statistics.median(a.cpu_ms / b.cpu_ms for b, a in pairs)
    print(
        f"\n| PUT /allocations, {options.clients} clients, {options.workers} workers, "
        f"{options.rounds} rounds of {options.seconds:g} s | claims/s | CPU ms/claim: "
        "API / DB |\n|---|---|---|"
    )
    for label in ("before", "after"):
        taken = rounds[label]
        print(
            f"| {label} {'(no feed)' if label == 'before' else '(feed)'} "
            f"| {statistics.median(r.claims_per_second for r in taken):.1f} "
            f"| {statistics.median(r.api_cpu_ms for r in taken):.2f} / "
            f"{statistics.median(r.db_cpu_ms for r in taken):.2f} |"
        )
    print(
        f"\nchange feed cost (medians of the rounds' after/before): "
        f"{100 * (1 - rate_ratio):+.1f}% of claims/s, {100 * (cpu_ratio - 1):+.1f}% CPU per claim"
    )


if __name__ == "__main__":
    main()
