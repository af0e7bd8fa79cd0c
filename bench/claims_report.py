"""The claims benchmark's results: one line per section as it runs, the
markdown table and the JSON summary (bench/claims_bench.py measures them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bench import claims_db
from bench.claims_floor import bound
from bench.claims_load import Tally

# The server name of the floor section's outcome (bench/claims_floor.py).
FLOOR = "empty endpoint"


@dataclass
class Outcome:
    section: str
    server: str
    tally: Tally
    sessions: int
    check: claims_db.Check | None = None
    verified: bool | None = None


def line(outcome: Outcome, claims: bool) -> str:
    tally = outcome.tally
    check = f", {outcome.check.describe()}" if outcome.check else ""
    return (
        f"  {outcome.section:34s} {outcome.server:8s} {tally.per_second(claims):8.1f}/s "
        f"p50 {tally.percentile_ms(0.5):7.1f} ms p99 {tally.percentile_ms(0.99):7.1f} ms "
        f"server CPU {tally.cpu_ms(tally.server_cpu, claims):6.2f} ms "
        f"PostgreSQL CPU {tally.cpu_ms(tally.database_cpu, claims):5.2f} ms "
        f"bench CPU {tally.cpu_ms(tally.bench_cpu, claims):5.2f} ms "
        f"sessions {outcome.sessions} statuses {dict(tally.statuses)} "
        f"errors {dict(tally.errors)}{check}"
    )


def summary(outcome: Outcome) -> dict[str, object]:
    tally, claims = outcome.tally, outcome.check is not None
    return {
        "section": outcome.section,
        "server": outcome.server,
        "per_second": tally.per_second(claims),
        "p50_ms": tally.percentile_ms(0.5),
        "p99_ms": tally.percentile_ms(0.99),
        "server_cpu_ms": tally.cpu_ms(tally.server_cpu, claims),
        "postgresql_cpu_ms": tally.cpu_ms(tally.database_cpu, claims),
        "bench_cpu_ms_per_request": 1000 * tally.bench_cpu / max(tally.requests, 1),
        "sessions_opened": outcome.sessions,
        "statuses": {str(status): count for status, count in tally.statuses.items()},
        "errors": dict(tally.errors),
        "check": asdict(outcome.check) if outcome.check else None,
        "verified": outcome.verified,
    }


def _ratio(ours: float, upstream: float) -> str:
    return f"{ours / upstream:.1f}x" if ours and upstream else "-"


def markdown(outcomes: list[Outcome], header: str) -> str:
    lines = [
        header,
        "",
        "| section | server | claims/s (reads: requests/s) | p50 ms | p99 ms "
        "| server CPU ms per claim (read) | PostgreSQL CPU ms per claim (read) "
        "| bench CPU ms per request | PG sessions opened | answers | database after |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    by_section: dict[str, dict[str, Outcome]] = {}
    floors = [outcome for outcome in outcomes if outcome.server == FLOOR]
    for outcome in outcomes:
        if outcome.server != FLOOR:
            by_section.setdefault(outcome.section, {})[outcome.server] = outcome
    for section, pair in by_section.items():
        claims = pair["ours"].check is not None
        for outcome in pair.values():
            tally = outcome.tally
            verified = (
                "-"
                if outcome.check is None
                else ("verified: " if outcome.verified else "WRONG: ") + outcome.check.describe()
            )
            per_request = 1000 * tally.bench_cpu / max(tally.requests, 1)
            lines.append(
                f"| {section} | {outcome.server} | {tally.per_second(claims):.1f} "
                f"| {tally.percentile_ms(0.5):.1f} | {tally.percentile_ms(0.99):.1f} "
                f"| {tally.cpu_ms(tally.server_cpu, claims):.2f} "
                f"| {tally.cpu_ms(tally.database_cpu, claims):.2f} | {per_request:.2f} "
                f"| {outcome.sessions} "
                f"| {' '.join(f'{s}:{n}' for s, n in sorted(tally.statuses.items()))} "
                f"| {verified} |"
            )
        ours = pair["ours"].tally
        for other in (name for name in pair if name != "ours"):
            up = pair[other].tally
            cpu = _ratio(up.cpu_ms(up.server_cpu, claims), ours.cpu_ms(ours.server_cpu, claims))
            lines.append(
                f"| {section} | **ours vs {other}** "
                f"| {_ratio(ours.per_second(claims), up.per_second(claims))} "
                f"| {_ratio(up.percentile_ms(0.5), ours.percentile_ms(0.5))} "
                f"| {_ratio(up.percentile_ms(0.99), ours.percentile_ms(0.99))} "
                f"| {cpu} "
                "| | | | | |"
            )
    for floor in floors:
        pair = by_section.get(floor.section, {})
        if "ours" in pair:
            upstream = pair["upstream"].tally if "upstream" in pair else None
            lines += ["", f"{floor.section}: {bound(floor.tally, pair['ours'].tally, upstream)}"]
    return "\n".join(lines) + "\n"
