"""Capacity report benchmark: 10,000 hosts x 5 flavors on PostgreSQL.

    python bench/capacity_bench.py [--hosts 10000] [--variants flat,nested] [--reps 15]

Data: the candidates benchmark's generator (``candidates_data``): flat
hosts with VCPU, MEMORY_MB and DISK_GB, or nested ones (two NUMA cells each,
disk from one sharing provider per aggregate), over 10 aggregates named
into three zones. Timed, median of ``--reps`` runs each:

- ``report``: one snapshot and the reports of all 5 flavors with every
  breakdown, in this process through the domain (what ``placement-api
  capacity`` and the gauges run), and apart the reading of the snapshot
  (the statements and their rows; the rest is Python);
- ``GET full`` / ``GET by=az,aggregate``: one flavor per request through
  a served API (answer encoded and sent; ``full`` lists every host).

On a shared machine wall times say little alone: the report also gives
this process's CPU time, and each GET is timed in turns with ``GET
/resource_providers`` (all 10,000 providers) on the same server, as a
yardstick whose ratio holds however loaded the machine is.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import candidates_data as data
import candidates_servers as servers
import httpx
import yaml

from placement_api.db.engine import create_engine
from placement_api.db.session import unit_of_work
from placement_api.domain.capacity_report.flavor import Flavor, resolve_flavors
from placement_api.domain.capacity_report.report import capacity_reports
from placement_api.domain.capacity_report.snapshot import read_snapshot
from placement_api.domain.capacity_report.zones import AggregateInfo, ZoneMap
from placement_api.domain.changes import recording_session_factory
from placement_api.serving.gc_policy import collector_paused
from placement_api.web.capacity_query import parse_flavor

ZONES = ("zone-a", "zone-b", "zone-c")


def flavors(dataset: data.Dataset) -> dict[str, str]:
    """Five flavors as query strings: plain sizes, a required and a forbidden trait."""
    first_two = ",".join(dataset.aggregates[:2])
    return {
        "small": "resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20",
        "medium": "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40",
        "large": "resources=VCPU:8,MEMORY_MB:32768,DISK_GB:160",
        "avx512": "resources=VCPU:4,MEMORY_MB:8192,DISK_GB:80&required=HW_CPU_X86_AVX512F",
        "no-gpu": f"resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40&required=!CUSTOM_GPU"
        f"&member_of=in:{first_two}",
    }


def _flavor(name: str, query: str) -> Flavor:
    items = [tuple(part.split("=", 1)) for part in query.split("&")]
    flavor = parse_flavor(name, [(key, value) for key, value in items])
    assert flavor is not None
    return flavor


def zone_map(dataset: data.Dataset) -> ZoneMap:
    return ZoneMap(
        {
            uuid: AggregateInfo(f"aggregate-{index}", ZONES[index % len(ZONES)])
            for index, uuid in enumerate(dataset.aggregates)
        }
    )


def timed_ms(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


async def _domain_runs(
    url: str, chosen: list[Flavor], zones: ZoneMap, reps: int
) -> tuple[float, float, float]:
    """Median wall and CPU (this process) milliseconds of one report, and
    the median wall milliseconds of reading its snapshot alone."""
    engine = create_engine(url, pool_size=1)
    factory = recording_session_factory(engine)
    walls, cpus, reads = [], [], []
    try:
        for _ in range(reps + 1):
            start, cpu = time.perf_counter(), time.process_time()
            async with unit_of_work(factory, write=False) as session:
                reports = await capacity_reports(session, chosen, zones, missed_intervals=3)
            walls.append((time.perf_counter() - start) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            async with unit_of_work(factory, write=False) as session:
                resolved = await resolve_flavors(session, chosen)
                trait_ids = frozenset().union(*(f.trait_ids for f in resolved))
                # As in the report: the collector would walk the generated data.
                with collector_paused():
                    start = time.perf_counter()
                    await read_snapshot(session, trait_ids)
                    reads.append((time.perf_counter() - start) * 1000)
        assert len(reports) == len(chosen)
    finally:
        await engine.dispose()
    return statistics.median(walls[1:]), statistics.median(cpus[1:]), statistics.median(reads[1:])


def run_variant(variant: str, hosts: int, reps: int, admin_dsn: str, out_dir: Path) -> None:
    dataset = data.generate(hosts, nested=variant == "nested")
    database = f"bench_capacity_{variant}_{hosts}"
    url = servers.prepare_ours(admin_dsn, database)
    asyncio.run(data.load(servers.server_dsn(admin_dsn, database), dataset, data.OURS))
    zones = zone_map(dataset)
    queries = flavors(dataset)
    chosen = [_flavor(name, query) for name, query in queries.items()]
    wall_ms, cpu_ms, read_ms = asyncio.run(_domain_runs(url, chosen, zones, reps))
    print(
        f"  {variant:6s} N={hosts} report (5 flavors, all breakdowns): {wall_ms:8.1f} ms "
        f"(CPU of this process: {cpu_ms:.1f} ms; reading the snapshot alone: {read_ms:.1f} ms)",
        flush=True,
    )
    config = out_dir / f"capacity-aggregates-{variant}.yaml"
    config.write_text(
        yaml.safe_dump(
            {"aggregates": {u: {"name": i.name, "availability_zone": i.availability_zone}
                            for u, i in zones.aggregates.items()}}
        )
    )  # fmt: skip
    os.environ["PLACEMENT_CAPACITY_AGGREGATES_FILE"] = str(config)
    try:
        with (
            servers.ours_server(url, out_dir / f"capacity-{variant}.log") as base_url,
            httpx.Client(base_url=base_url, headers=servers.HEADERS, timeout=120) as client,
        ):
            yardstick = functools.partial(_get, client, "/resource_providers")
            for label, extra in (("GET full", ""), ("GET by=az,aggregate", "&by=az,aggregate")):
                ours, theirs = [], []
                for query in queries.values():
                    report_get = partial_get(client, query + extra)
                    report_get()  # warm: statement compilation, caches
                    yardstick()
                    # In turns: the capacity report, then the yardstick.
                    for _ in range(reps):
                        ours.append(timed_ms(report_get))
                        theirs.append(timed_ms(yardstick))
                report, listing = statistics.median(ours), statistics.median(theirs)
                print(
                    f"  {variant:6s} N={hosts} {label:20s} median {report:8.1f} ms; "
                    f"GET /resource_providers in turns: {listing:8.1f} ms "
                    f"(ratio {report / listing:.2f})",
                    flush=True,
                )
    finally:
        del os.environ["PLACEMENT_CAPACITY_AGGREGATES_FILE"]
        asyncio.run(servers.drop_database(admin_dsn, database))


def partial_get(client: httpx.Client, query: str) -> Callable[[], None]:
    return functools.partial(_get, client, f"/capacity?{query}")


def _get(client: httpx.Client, path: str) -> None:
    response = client.get(path, headers={"openstack-api-version": "placement 1.39"})
    response.raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--variants", default="flat,nested")
    parser.add_argument("--reps", type=int, default=15, help="timed runs per measurement")
    servers.add_pg_url_option(parser)
    parser.add_argument("--out-dir", type=Path, default=servers.ROOT / "var" / "bench")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for variant in args.variants.split(","):
        run_variant(variant, args.hosts, args.reps, args.pg_url, args.out_dir)


if __name__ == "__main__":
    main()
