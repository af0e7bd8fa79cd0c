"""``db import`` benchmark: a large upstream Placement database into ours, and back.

For each source backend, an upstream database is made by upstream's own
migrations (``placement-manage db sync``, openstack-placement in its venv)
and filled by SQL (``import_data.py``); then, for each target backend, a
fresh database of ours is migrated and ``placement-api db import`` runs on
it as an operator would run it, then ``placement-api db export`` into a new
upstream database. The wall time of each command (start-up, read, checks,
write, verification) is reported.

    python bench/import_bench.py --sources mariadb --targets postgresql,sqlite
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

sys.path.insert(0, str(Path(__file__).resolve().parent))

import import_data
import upstream

from placement_api.db import migrations

SERVERS = {
    "mariadb": os.environ.get("PLACEMENT_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306"),
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432",
}


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default="mariadb,postgresql", help="upstream backends")
    parser.add_argument("--targets", default="postgresql,sqlite", help="our backends")
    parser.add_argument("--providers", type=int, default=10_000)
    parser.add_argument("--allocations", type=int, default=300_000)
    parser.add_argument("--out", type=Path, default=upstream.ROOT / "var" / "bench" / "import.json")
    return parser.parse_args()


@contextmanager
def _ours(target: str, workdir: Path) -> Iterator[str]:
    """A new, migrated database of ours on the target backend."""
    if target == "sqlite":
        url = f"sqlite+aiosqlite:///{workdir / 'ours.sqlite'}"
        migrations.upgrade(url)
        yield url
        return
    with upstream.scratch_database(SERVERS["postgresql"], "placement_bench_ours") as url:
        url = url.replace("+psycopg", "+asyncpg", 1)
        migrations.upgrade(url)
        yield url


def _timed(ours_url: str, *args: str) -> float:
    """Wall time of ``placement-api db ARGS`` on our database, as an operator runs it."""
    env = dict(os.environ, PLACEMENT_DATABASE_URL=ours_url)
    started = time.monotonic()
    command = [sys.executable, "-m", "placement_api", "db", *args]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def _both_ways(
    bin_dir: Path, source: str, source_url: str, target: str, workdir: Path
) -> dict[str, float]:
    """Import into a new database of ours, then export it into a new upstream one."""
    with _ours(target, workdir) as ours_url:
        imported = _timed(ours_url, "import", "--source", source_url)
        with upstream.scratch_database(SERVERS[source], "placement_bench_back") as back_url:
            upstream.db_sync(bin_dir, back_url, workdir / "back-config")
            exported = _timed(ours_url, "export", "--target", back_url)
    return {"import_seconds": imported, "export_seconds": exported}


def main() -> int:
    options = _arguments()
    bin_dir = upstream.ensure_upstream_venv()
    results = []
    for source in options.sources.split(","):
        with (
            upstream.scratch_database(SERVERS[source], "placement_bench_upstream") as source_url,
            tempfile.TemporaryDirectory(prefix="import-bench-") as scratch,
        ):
            workdir = Path(scratch)
            upstream.db_sync(bin_dir, source_url, workdir / "upstream-config")
            engine = create_engine(source_url, poolclass=NullPool)
            started = time.monotonic()
            with engine.begin() as connection:
                rows = import_data.generate(
                    connection, providers=options.providers, allocations=options.allocations
                )
            engine.dispose()
            print(f"{source}: generated {rows} in {time.monotonic() - started:.1f} s", flush=True)
            for target in options.targets.split(","):
                times = _both_ways(bin_dir, source, source_url, target, workdir)
                print(
                    f"{source} -> {target}: import {times['import_seconds']:.1f} s, "
                    f"export back {times['export_seconds']:.1f} s",
                    flush=True,
                )
                results.append({"source": source, "target": target, **times, **rows})
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
