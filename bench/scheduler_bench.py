"""Scheduler benchmark: K concurrent schedulers placing instances on N hosts.

For every backend and host count a fresh database and Placement server
(``python -m placement_api serve --workers W``) are started and the hosts
created through the API. For every K, K independent schedulers (each with
its own client and its own host cache, as separate scheduler processes
would have) place a fixed number of instances, one request at a time each,
all at once. Reported per configuration: placements per second, p50/p95
decision latency, the claim conflict rate (claims Placement refused with 409
/ claims tried), how many decisions read candidates from Placement instead
of the cache, and the CPU time per placement of the scheduler process, of
the API processes and of the database server's backends (PostgreSQL; SQLite
runs inside the API). Each configuration runs with the host cache on its
timer and following the change feed (``--cache``), one right after the
other, so their ratio is measured under the same load. Afterwards the database itself is checked: no
inventory over capacity, every ``inventories.used`` equal to the sum of its
allocations, every successful placement holding exactly its allocation and
no other consumer holding anything. Allocations are then removed in the
database directly (fast; cleaning up is not what is measured).

    python bench/scheduler_bench.py                      # small: about a minute
    python bench/scheduler_bench.py --backend postgresql,sqlite --hosts 1000,5000 \\
        --schedulers 1,4,16 --instances 500
    python bench/scheduler_bench.py --per-request 10     # multi-instance requests
    python bench/scheduler_bench.py --cache feed          # the feed-following cache only
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from placement_api.db.engine import create_engine
from placement_client import PlacementClient, PlacementError
from scheduler.answers.results import ScheduleResponse
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError
from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.query import candidates_query
from scheduler.request.spec import ScheduleRequest, resource_request
from scheduler.serving.collector import tune_collector
from scheduler.settings import SchedulerSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scheduler_bench_infra as infra
from scheduler_bench_report import RunResult, comparison, goals, markdown, print_run

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
FLAVORS = [
    {"VCPU": 1, "MEMORY_MB": 2048, "DISK_GB": 20},
    {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40},
    {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 80},
]


@dataclass
class _Worker:
    latencies: list[float] = field(default_factory=list)
    placed: infra.Placed = field(default_factory=dict)
    refused: int = 0
    errors: int = 0
    claims: int = 0
    conflicts: int = 0
    reads: int = 0
    written_with: int = 0  # summed over the placed consumers' successful claims


async def _create_hosts(
    http: httpx.AsyncClient, count: int, rng: random.Random, vcpus: int | None
) -> None:
    """Hosts of mixed sizes; with ``vcpus``, that many VCPU each (ratio 1), so that the
    cloud fills up and claims compete."""
    limit = asyncio.Semaphore(16)
    vcpu = {"total": vcpus, "allocation_ratio": 1.0} if vcpus else None

    async def create(index: int) -> None:
        async with limit:
            response = await http.post("/resource_providers", json={"name": f"bench-{index:05d}"})
            response.raise_for_status()
            rp = str(response.json()["uuid"])
            inventories = {
                "VCPU": vcpu or {"total": rng.choice((16, 32, 64)), "allocation_ratio": 4.0},
                "MEMORY_MB": {"total": rng.choice((65536, 131072, 262144)), "reserved": 2048},
                "DISK_GB": {"total": rng.choice((500, 1000, 2000)), "reserved": 20},
            }
            body = {"resource_provider_generation": 0, "inventories": inventories}
            response = await http.put(f"/resource_providers/{rp}/inventories", json=body)
            response.raise_for_status()

    await asyncio.gather(*(create(index) for index in range(count)))


def _tally(worker: _Worker, result: ScheduleResponse | NoValidHostError) -> None:
    if isinstance(result, NoValidHostError):
        worker.refused += 1
        explanation = result.explanation
    else:
        explanation = result.explanation
        for selection in result.selections:
            worker.placed[selection.consumer_uuid] = {
                rp: dict(a.resources) for rp, a in selection.allocations.items()
            }
    attempts = [a for i in explanation.instances for a in i.claims]
    worker.claims += len(attempts)
    worker.conflicts += sum(1 for a in attempts if a.outcome == "conflict")
    worker.written_with += sum(a.written_with for a in attempts if a.outcome == "claimed")
    placement = explanation.placement
    worker.reads += placement is not None and placement.cache_age_seconds is None


async def _scheduler_loop(
    scheduler: Scheduler, requests: list[ScheduleRequest], deadline: float
) -> _Worker:
    worker = _Worker()
    for spec in requests:
        if time.perf_counter() > deadline:
            break
        started = time.perf_counter()
        outcome: ScheduleResponse | NoValidHostError
        try:
            outcome = await scheduler.schedule(spec)
        except NoValidHostError as exc:
            outcome = exc
        except PlacementError as exc:
            print(f"    request failed: {exc}", flush=True)
            worker.errors += 1
            continue
        worker.latencies.append(time.perf_counter() - started)
        _tally(worker, outcome)
    return worker


@dataclass(frozen=True)
class _Config:
    backend: str
    hosts: int
    schedulers: int
    shared: bool
    instances: int
    per_request: int
    cache: str
    max_seconds: float
    settings: dict[str, Any]


async def _run(server: infra.Server, config: _Config, engine: AsyncEngine, seed: int) -> RunResult:
    rng = random.Random(seed)
    k, per_request = config.schedulers, config.per_request
    requests = [
        ScheduleRequest.model_validate(
            {"resources": rng.choice(FLAVORS), "num_instances": per_request}
        )
        for _ in range(max(1, config.instances // per_request))
    ]
    settings = SchedulerSettings(
        api_url=server.url, host_cache_source=config.cache, **config.settings
    )
    tune_collector(settings)  # this process is the scheduler, as `serve` tunes it
    clients = [
        SchedulerPlacement(PlacementClient.with_token(server.url, "admin"))
        for _ in range(1 if config.shared else k)
    ]
    schedulers = [Scheduler(settings, c, rng=random.Random(i)) for i, c in enumerate(clients)]
    await asyncio.gather(*(scheduler.start() for scheduler in schedulers))
    if config.cache == "feed" and not all(s.host_cache.live for s in schedulers):
        raise RuntimeError("the scheduler does not follow the change feed")
    await _warm(schedulers)
    api_pids, db_pids = infra.process_tree(server.pid), await infra.database_pids(server)
    own, api, db = _own_cpu(), infra.cpu_seconds(api_pids), infra.cpu_seconds(db_pids)
    started = time.perf_counter()
    deadline = started + config.max_seconds
    workers = await asyncio.gather(
        *(_scheduler_loop(schedulers[i % len(schedulers)], requests[i::k], deadline)
          for i in range(k))
    )  # fmt: skip
    seconds = time.perf_counter() - started
    cpu = (
        _own_cpu() - own,
        infra.cpu_used(api, infra.cpu_seconds(api_pids)),
        infra.cpu_used(db, infra.cpu_seconds(db_pids | await infra.database_pids(server))),
    )
    for scheduler in schedulers:
        await scheduler.aclose()
    for client in clients:
        await client.aclose()
    result = _summarise(config, workers, seconds)
    placed = max(1, result.placed)
    result.scheduler_cpu_ms, result.api_cpu_ms, result.db_cpu_ms = (
        round(seconds * 1000 / placed, 2) for seconds in cpu
    )
    everything = {c: a for w in workers for c, a in w.placed.items()}
    result.over_capacity, result.wrong_allocations = await infra.verify(engine, everything)
    await infra.reset(engine)
    return result


async def _warm(schedulers: list[Scheduler]) -> None:
    """Read each scheduler's candidates once per flavor before the clock starts, as a
    running scheduler has them (the Kubernetes scheduler, too, waits for its informer
    caches to sync before scheduling). Their refreshes during the run are measured."""
    for scheduler in schedulers:
        for flavor in FLAVORS:
            spec = ScheduleRequest.model_validate({"resources": flavor})
            limit = scheduler.settings.max_allocation_candidates
            await scheduler.host_cache.view(candidates_query(resource_request(spec), limit))


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _summarise(config: _Config, workers: list[_Worker], seconds: float) -> RunResult:
    latencies = sorted(x for w in workers for x in w.latencies)
    result = RunResult(
        backend=config.backend,
        hosts=config.hosts,
        schedulers=config.schedulers,
        shared=config.shared,
        per_request=config.per_request,
        cache=config.cache,
        requested=config.instances,
        seconds=round(seconds, 2),
    )
    result.placed = sum(len(w.placed) for w in workers)
    result.no_valid_host = sum(w.refused for w in workers)
    result.placement_errors = sum(w.errors for w in workers)
    result.placements_per_second = round(result.placed / seconds, 1)
    result.latency_p50_ms = round(statistics.median(latencies) * 1000, 1)
    result.latency_p95_ms = round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1)
    result.claims = sum(w.claims for w in workers)
    result.conflicts = sum(w.conflicts for w in workers)
    result.conflict_rate = round(result.conflicts / max(1, result.claims), 4)
    result.conflicts_per_placement = round(result.conflicts / max(1, result.placed), 3)
    result.claims_per_write = round(sum(w.written_with for w in workers) / max(1, result.placed), 1)
    result.decisions = len(latencies)
    result.candidate_reads = sum(w.reads for w in workers)
    return result


def _bench_hosts(
    server: infra.Server, configs: list[_Config], vcpus: int | None
) -> list[RunResult]:
    hosts = configs[0].hosts

    async def run_all() -> list[RunResult]:
        async with httpx.AsyncClient(base_url=server.url, headers=HEADERS, timeout=60) as http:
            started = time.perf_counter()
            await _create_hosts(http, hosts, random.Random(hosts), vcpus)
            print(f"  {hosts} hosts created in {time.perf_counter() - started:.1f}s", flush=True)
        engine = create_engine(server.database_url)
        results = []
        try:
            for seed, config in enumerate(configs):
                result = await _run(server, config, engine, seed)
                print_run(result)
                results.append(result)
        finally:
            await engine.dispose()
        return results

    return asyncio.run(run_all())


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", default="postgresql", help="sqlite and/or postgresql.")
    parser.add_argument("--hosts", default="200", help="Comma-separated host counts.")
    parser.add_argument("--schedulers", default="1,4", help="Comma-separated K values.")
    parser.add_argument("--instances", type=int, default=300, help="Instances per run.")
    parser.add_argument("--per-request", default="1", help="Instances per request, comma list.")
    parser.add_argument("--api-workers", type=int, default=1, help="placement-api --workers.")
    parser.add_argument("--max-seconds", type=float, default=120, help="Time cap per run.")
    parser.add_argument("--cache-seconds", type=float, help="Scheduler host_cache_seconds.")
    parser.add_argument(
        "--cache",
        default="timer,feed",
        help="Host cache sources to compare, run one after the other (timer, feed).",
    )
    parser.add_argument(
        "--separate-up-to",
        type=int,
        default=16,
        help="Run K>1 as separate schedulers only up to this K (each reads its own "
        "candidates at start).",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Another scheduler setting, e.g. claim_batch_size=1 (repeatable).",
    )
    parser.add_argument("--host-vcpus", type=int, help="Small hosts: this many VCPU each.")
    parser.add_argument(
        "--shared",
        action="store_true",
        help="Also run K>1 as K concurrent requests to one scheduler (one cache), as the "
        "scheduler service serves them.",
    )
    parser.add_argument(
        "--shared-only", action="store_true", help="Run K>1 in the shared mode only."
    )
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    settings: dict[str, Any] = {"host_subset_size": 3, "claim_attempts": 5}
    if args.cache_seconds is not None:
        settings["host_cache_seconds"] = args.cache_seconds
    for assignment in args.set:
        name, _, value = assignment.partition("=")
        settings[name] = value
    results: list[RunResult] = []
    for backend in args.backend.split(","):
        for hosts in (int(h) for h in args.hosts.split(",")):
            print(f"scheduler bench: {hosts} hosts, backend {backend}", flush=True)
            ks = [int(k) for k in args.schedulers.split(",")]
            separate = [
                k for k in ks if k == 1 or (not args.shared_only and k <= args.separate_up_to)
            ]
            shared = [k for k in ks if k > 1 and (args.shared or args.shared_only)]
            modes = [(k, False) for k in separate] + [(k, True) for k in shared]
            configs = [
                _Config(backend, hosts, k, shared, args.instances, int(per_request), cache,
                        args.max_seconds, settings)
                for per_request in args.per_request.split(",")
                for k, shared in modes
                for cache in args.cache.split(",")
            ]  # fmt: skip
            with ExitStack() as stack:
                scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="sched-bench-"))
                server = stack.enter_context(
                    infra.placement(backend, Path(scratch), args.api_workers)
                )
                results.extend(_bench_hosts(server, configs, args.host_vcpus))
    print(markdown(results))
    print(comparison(results))
    print(goals(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        rows: list[dict[str, Any]] = [asdict(r) | {"verified": r.verified} for r in results]
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(r.verified for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
