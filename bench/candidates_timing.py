"""How the candidates benchmark times a query: one server's requests in blocks
(``Series``), the servers taking turns (``measure``), and the table of
p50/p95 latencies and ratios."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import httpx


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
