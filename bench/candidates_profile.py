"""Where one ``GET /allocation_candidates`` spends its time, in process.

    python bench/candidates_profile.py                         # every flat limit=1000 query
    python bench/candidates_profile.py --query member_of --requests 200 --cprofile 40
    python bench/candidates_profile.py --query plain --record var/bench/plain.txt

Runs against the database the candidates benchmark keeps
(``candidates_bench.py --keep-databases``, by default its flat 10,000-host
one): the app is called as uvicorn calls it (raw ASGI, as
``claims_profile.py`` does), one request at a time, with the logging
``serve`` sets up as shipped (``info``, an access line per request, written
to ``--access-log``). For each query: the median wall time and the mean CPU time per request, the
statements sent to PostgreSQL and the rows they returned, and the wall
time inside each phase of the request (``PHASES``; phases read on the second
connection overlap the others, so the phases need not add up). With
``--cprofile N`` the same requests under cProfile, the N costliest functions
by their own time; with ``--record FILE`` sampled by py-spy
(``--py-spy``: its path) into FILE, raw, for ``request_profile.py --stacks``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import logging.config
import os
import pstats
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg
import asyncpg.prepared_stmt
import candidates_servers as servers

from bench.claims_phases import wrapped
from bench.claims_profile import call
from placement_api.app import create_app
from placement_api.domain.candidates import (
    indexed_trees,
    lookups,
    member_pages,
    pacing,
    provider_index,
    queries,
    service,
    windows,
)
from placement_api.observability.logs import logging_config
from placement_api.settings import Settings
from placement_api.web.routers import allocation_candidates as router

FLAVOR = "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40"
BIG = "resources=VCPU:16,MEMORY_MB:65536,DISK_GB:500"
QUERIES = {
    "plain": f"{FLAVOR}&limit=1000",
    "avx512": f"{FLAVOR}&required=HW_CPU_X86_AVX512F&limit=1000",
    "member_of": f"{FLAVOR}&member_of={{aggregate}}&limit=1000",
    "member_of_not_gpu": f"{FLAVOR}&member_of={{aggregate}}&required=!CUSTOM_GPU&limit=1000",
    "gpu": f"{BIG}&required=CUSTOM_GPU&limit=1000",
    "unlimited": FLAVOR,
}
LIMITED = [name for name in QUERIES if name != "unlimited"]

# phase -> (owner, attribute), wrapped to add up the wall time inside.
PHASES: dict[str, tuple[Any, str]] = {
    "whole handler (in the unit of work and after)": (router, "_answer"),
    "provider index: refresh and search": (router, "from_index"),
    "provider index: refresh": (provider_index.ProviderIndex, "current"),
    "provider index, trees: rows": (indexed_trees, "group_rows"),
    "provider index, trees: options": (indexed_trees, "group_plan"),
    "provider index, trees: providers used": (indexed_trees, "providers_of"),
    "provider index, trees: summaries": (indexed_trees, "summaries_of"),
    "find_candidates (SQL and search)": (router, "find_candidates"),
    "prelude": (service, "read_prelude"),
    "rows: unsuffixed group": (queries, "unsuffixed_rows"),
    "rows: granular group": (queries, "granular_rows"),
    "member counts": (lookups, "member_counts"),
    "member pages": (member_pages.MemberPages, "__call__"),
    "search: single providers": (windows, "single_provider_search"),
    "search: the walk": (pacing, "gather"),
    "summaries (waiting for the read ahead, building)": (service, "load_summaries"),
    "answer: provider summaries (JSON text)": (router, "_provider_summaries"),
    "answer: requests' text, written with the rest": (router, "answer_text"),
    "answer: response": (router, "json_response"),
}


class Statements:
    """Statements sent through asyncpg's connection, the rows they returned
    and the wall time spent awaiting them (the second connection's overlap)."""

    # The direct path's (``db.driver``) and SQLAlchemy's (prepared statements).
    METHODS = (
        (asyncpg.Connection, ("fetch", "fetchrow", "fetchval", "execute", "executemany")),
        (asyncpg.prepared_stmt.PreparedStatement, ("fetch", "fetchrow", "fetchval")),
    )

    def __init__(self) -> None:
        self.count = 0
        self.rows = 0
        self.wall = 0.0
        # SQL -> (times sent, rows, wall seconds), for ``--sql``.
        self.each: dict[str, list[float]] = {}

    @contextmanager
    def counted(self) -> Iterator[None]:
        with ExitStack() as undo:
            for owner, names in self.METHODS:
                for name in names:
                    original = getattr(owner, name)
                    setattr(owner, name, self._wrap(original))
                    undo.callback(setattr, owner, name, original)
            yield

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        async def counting(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            result = await original(*args, **kwargs)
            spent = time.perf_counter() - began
            rows = len(result) if isinstance(result, list) else 0
            self.wall += spent
            self.count += 1
            self.rows += rows
            sql = args[1] if len(args) > 1 and isinstance(args[1], str) else str(args[0])
            seen = self.each.setdefault(sql, [0, 0, 0.0])
            seen[0] += 1
            seen[1] += rows
            seen[2] += spent
            return result

        return counting


async def _run(app: Any, path: str, count: int) -> tuple[float, float]:
    """``count`` requests; the median of their wall times and this process's
    CPU seconds per request."""
    walls = []
    cpu = time.process_time()
    for _ in range(count):
        began = time.perf_counter()
        status = await call(app, "GET", path)
        walls.append(time.perf_counter() - began)
        assert status == 200, status
    return statistics.median(walls), (time.process_time() - cpu) / count


@contextmanager
def timed_phases(spent: dict[str, float]) -> Iterator[None]:
    with ExitStack() as undo:
        for name, (owner, attribute) in PHASES.items():
            # Another commit's code (``PYTHONPATH``) may lack a phase.
            original = getattr(owner, attribute, None)
            if original is None:
                continue
            setattr(owner, attribute, wrapped(original, name, spent, time.perf_counter))
            undo.callback(setattr, owner, attribute, original)
        yield


async def _aggregate(url: str) -> str:
    connection = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        found = await connection.fetchval(
            "SELECT uuid FROM placement_aggregates ORDER BY id LIMIT 1"
        )
    finally:
        await connection.close()
    return str(found)


async def profile(options: argparse.Namespace, url: str) -> None:
    aggregate = await _aggregate(url)
    app = create_app(Settings(database_url=url, auth_strategy="noauth2"))
    options.access_log.parent.mkdir(parents=True, exist_ok=True)
    with options.access_log.open("a") as stream:
        sys.stderr = stream
        logging.config.dictConfig(logging_config("text", "info"))
        try:
            async with app.router.lifespan_context(app):
                for name in options.query.split(","):
                    path = "/allocation_candidates?" + QUERIES[name].format(aggregate=aggregate)
                    await _one_query(app, name, path, options)
        finally:
            sys.stderr = sys.__stderr__


def _out(text: str) -> None:
    print(text, file=sys.__stdout__, flush=True)


async def _one_query(app: Any, name: str, path: str, options: argparse.Namespace) -> None:
    count = options.requests
    await _run(app, path, max(count // 4, 5))  # warm: pools, compiled statements, names
    wall, cpu = await _run(app, path, count)
    _out(f"\n== {name}: {path}")
    _out(f"wall {1000 * wall:.2f} ms (median), CPU {1000 * cpu:.2f} ms per request")
    statements = Statements()
    spent: dict[str, float] = {}
    with statements.counted(), timed_phases(spent):
        await _run(app, path, count)
    _out(
        f"statements {statements.count / count:.1f}, rows {statements.rows / count:.0f}, "
        f"awaiting them {1000 * statements.wall / count:.2f} ms per request"
    )
    for phase in PHASES:
        _out(f"  {phase:52s} {1000 * spent.get(phase, 0.0) / count:7.3f} ms")
    if options.sql:
        for sql, (sent, rows, seconds) in statements.each.items():
            each = f"{rows / sent:.0f} rows, {1000 * seconds / sent:.2f} ms"
            _out(f"-- sent {sent / count:.1f}x, {each}")
            _out(sql)
    if options.cprofile:
        profiler = cProfile.Profile(time.perf_counter)
        profiler.enable()
        await _run(app, path, count)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.__stdout__)
        stats.sort_stats("tottime").print_stats(options.cprofile)
    if options.record is not None:
        await _record(app, path, count, options)


async def _record(app: Any, path: str, count: int, options: argparse.Namespace) -> None:
    sampler = [options.py_spy, "record", "-r", "1000", "-f", "raw", "-o", str(options.record)]
    recording = await asyncio.create_subprocess_exec(*sampler, "--idle", "--pid", str(os.getpid()))
    await asyncio.sleep(1)  # py-spy attached
    await _run(app, path, count)
    recording.send_signal(signal.SIGINT)
    await recording.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default="bench_ac_ours_flat_10000")
    parser.add_argument(
        "--query", default=",".join(LIMITED), help=f"comma-separated, of {', '.join(QUERIES)}"
    )
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--sql", action="store_true", help="print each statement and its cost")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N", help="functions printed")
    parser.add_argument("--record", type=Path, help="sample with py-spy, keep its output here")
    parser.add_argument("--py-spy", default="py-spy")
    parser.add_argument("--access-log", type=Path, default=Path("var/bench/access.log"))
    servers.add_pg_url_option(parser)
    options = parser.parse_args()
    url = servers.server_dsn(options.pg_url, options.database)
    asyncio.run(profile(options, url.replace("postgresql://", "postgresql+asyncpg://", 1)))


if __name__ == "__main__":
    main()
