"""The scheduler benchmark's results: one row per run, the table, the timer against
the feed-following cache in the same run, and the goals of issue #16."""

from __future__ import annotations

from dataclasses import dataclass, field

# Issue #16: 64 concurrent requests on 5,000 hosts, placements per second.
GOAL_HOSTS, GOAL_SCHEDULERS = 5000, 64
GOALS = {1: 1000.0, 10: 1500.0}  # instances per request -> placements/s


@dataclass
class RunResult:
    backend: str
    hosts: int
    schedulers: int
    shared: bool
    per_request: int
    cache: str  # the host cache's source: timer or feed
    requested: int
    placed: int = 0
    no_valid_host: int = 0
    placement_errors: int = 0  # requests failed (and rolled back) on a Placement error
    seconds: float = 0.0
    placements_per_second: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    claims: int = 0
    conflicts: int = 0
    conflict_rate: float = 0.0
    conflicts_per_placement: float = 0.0
    claims_per_write: float = 0.0  # mean claims per Placement write of a placed consumer
    decisions: int = 0
    candidate_reads: int = 0
    scheduler_cpu_ms: float = 0.0  # per placement
    api_cpu_ms: float = 0.0
    db_cpu_ms: float = 0.0
    over_capacity: list[str] = field(default_factory=list)
    wrong_allocations: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.over_capacity and not self.wrong_allocations


def print_run(result: RunResult) -> None:
    status = "ok" if result.verified else "FAILED VERIFICATION"
    print(
        f"  K={result.schedulers:<3}{_mode(result)} x{result.per_request} {result.cache} "
        f"placed {result.placed}/"
        f"{result.requested} ({result.no_valid_host} no valid host, {result.placement_errors} "
        f"Placement errors) in {result.seconds:.1f}s: "
        f"{result.placements_per_second}/s, p50 {result.latency_p50_ms} ms, "
        f"p95 {result.latency_p95_ms} ms, conflicts {result.conflicts}/{result.claims} "
        f"({result.conflicts_per_placement}/placement), "
        f"claims/write {result.claims_per_write}, "
        f"reads {result.candidate_reads}/{result.decisions}, CPU ms/placement scheduler "
        f"{result.scheduler_cpu_ms} api {result.api_cpu_ms} db {result.db_cpu_ms}; "
        f"verification {status}",
        flush=True,
    )
    for problem in (result.over_capacity + result.wrong_allocations)[:10]:
        print(f"    {problem}")


def _mode(result: RunResult) -> str:
    return " shared" if result.shared else ""


def _failures(result: RunResult) -> str:
    refused, errors = result.no_valid_host, result.placement_errors
    return f" ({refused} no valid host, {errors} errors)" if refused or errors else ""


def markdown(results: list[RunResult]) -> str:
    lines = [
        "| backend | hosts | K | instances/request | cache | placed | placements/s | p50 ms "
        "| p95 ms | 409s/placement | conflicts | claims/write | candidates reads "
        "| CPU ms/placement: scheduler / API / DB | verified |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.backend} | {r.hosts} | {r.schedulers}{_mode(r)} | {r.per_request} "
            f"| {r.cache} | {r.placed}{_failures(r)} "
            f"| {r.placements_per_second} | {r.latency_p50_ms} | {r.latency_p95_ms} "
            f"| {r.conflicts_per_placement} "
            f"| {r.conflict_rate:.1%} ({r.conflicts}/{r.claims}) | {r.claims_per_write} "
            f"| {r.candidate_reads}/{r.decisions} "
            f"| {r.scheduler_cpu_ms} / {r.api_cpu_ms} / {r.db_cpu_ms} "
            f"| {'yes' if r.verified else 'NO'} |"
        )
    return "\n".join(lines)


def comparison(results: list[RunResult]) -> str:
    """The feed-following cache against the timer, configuration by configuration."""
    timer = {_key(r): r for r in results if r.cache == "timer"}
    lines = [
        "| hosts | K | instances/request | placements/s feed / timer | 409s/placement "
        "timer -> feed | candidates reads timer -> feed |",
        "|---:|---|---:|---:|---|---|",
    ]
    for feed in (r for r in results if r.cache == "feed" and _key(r) in timer):
        other = timer[_key(feed)]
        ratio = feed.placements_per_second / max(other.placements_per_second, 0.1)
        lines.append(
            f"| {feed.hosts} | {feed.schedulers}{_mode(feed)} | {feed.per_request} "
            f"| {ratio:.2f} | {other.conflicts_per_placement} -> {feed.conflicts_per_placement} "
            f"| {other.candidate_reads} -> {feed.candidate_reads} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def goals(results: list[RunResult]) -> str:
    """Issue #16's scheduler goals, met or not, for every run that measures one."""
    lines = []
    for r in results:
        goal = GOALS.get(r.per_request)
        if goal is None or (r.hosts, r.schedulers, r.shared) != (GOAL_HOSTS, GOAL_SCHEDULERS, True):
            continue
        met = r.placements_per_second >= goal and r.verified
        lines.append(
            f"goal {r.schedulers} concurrent x{r.per_request} on {r.hosts} hosts ({r.cache} "
            f"cache): {r.placements_per_second}/s of {goal:.0f}/s "
            f"{'met' if met else 'NOT met'}"
        )
    return "\n".join(lines)


def _key(r: RunResult) -> tuple[str, int, int, bool, int]:
    return (r.backend, r.hosts, r.schedulers, r.shared, r.per_request)
