"""schemathesis against openapi.yaml and a served placement-api, on every backend.

Every phase runs (examples, coverage, fuzzing, stateful) with positive and
negative data: no answer may be a 5xx, and answers must match the documented
schema where ``schemathesis.toml`` (beside this file) does not say why a
check is left out. Bounded by ``MAX_EXAMPLES`` per operation and a fixed seed,
so a run is repeatable and takes about a minute per backend.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import databases
from tests.support.server import live_server

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("schemathesis.toml")
MAX_EXAMPLES = 3
SEED = 0


def _command() -> list[str]:
    return [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "--no-color",
        "run", str(ROOT / "openapi.yaml"), "--max-examples", str(MAX_EXAMPLES),
        "--seed", str(SEED), "--workers", "1",
    ]  # fmt: skip


def test_the_api_survives_schemathesis_and_matches_its_schema(
    database_url: str, tmp_path: Path
) -> None:
    try:
        with live_server(database_url, PLACEMENT_ENFORCE_NEW_DEFAULTS="false") as server:
            run = subprocess.run(
                [*_command(), "--url", server.url],
                cwd=tmp_path,  # its Hypothesis database and reports stay out of the tree
                capture_output=True,
                text=True,
                timeout=600,
            )
    finally:
        databases.empty(database_url)
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:]
    assert "Server error" not in run.stdout
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in run.stdout, run.stdout[-5_000:]
