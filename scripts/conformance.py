"""Run the upstream Placement gabbi files that we pass, on SQLite and PostgreSQL.

The list lives in ``.ci/conformance-files.txt``: a file is added once it
passes, so it can never silently regress. Exits non-zero when any test in a
listed file fails on either database.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT.parent / "shared" / "conformance" / "run"
LIST = ROOT / ".ci" / "conformance-files.txt"
RESULTS = ROOT / "var" / "conformance" / "results.json"


def listed_files() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in LIST.read_text().splitlines())
    return [line for line in lines if line]


def run(database: str, files: list[str]) -> tuple[int, int, list[str]]:
    args = [str(RUNNER), "--db", database]
    for name in files:
        args += ["--only", name]
    subprocess.run(args, cwd=ROOT, check=True)
    results = json.loads(RESULTS.read_text())["files"]
    passed = failed = 0
    problems: list[str] = []
    for name in files:
        entry = results.get(name)
        if entry is None:
            problems.append(f"{database}: {name}: not run")
            failed += 1
            continue
        passed += entry["counts"]["passed"]
        failed += entry["counts"]["failed"] + entry["counts"]["not_run"]
        problems += [
            f"{database}: {name}: {f['name']}: {f.get('reason', '')}"[:400]
            for f in entry.get("failures", [])
        ]
        if entry["status"] != "clean" and not entry.get("failures"):
            problems.append(f"{database}: {name}: {entry['status']}")
            failed += 1
    return passed, failed, problems


def main() -> int:
    if not RUNNER.exists():
        print(f"conformance runner not found at {RUNNER}", file=sys.stderr)
        return 2
    files = listed_files()
    total_passed = total_failed = 0
    all_problems: list[str] = []
    for database in ("sqlite", "postgresql"):
        passed, failed, problems = run(database, files)
        total_passed += passed
        total_failed += failed
        all_problems += problems
    for problem in all_problems:
        print(problem)
    print(f"conformance: {total_passed} passed, {total_failed} failed")
    return 1 if total_failed or all_problems else 0


if __name__ == "__main__":
    sys.exit(main())
