"""A bad capacity file stops ``serve`` with one line and exit 2, and fails ``status``."""

from __future__ import annotations

from pathlib import Path

from placement_api.db import migrations
from tests.db.test_operator_cli import run_in


def test_serve_refuses_to_start_on_a_bad_or_missing_capacity_file(tmp_path: Path) -> None:
    aggregates = tmp_path / "aggregates.yaml"
    aggregates.write_text("aggregates:\n  rack-1:\n    name: r\n")
    for variable, path, reason in (
        ("PLACEMENT_CAPACITY_AGGREGATES_FILE", aggregates, "not an aggregate UUID"),
        ("PLACEMENT_CAPACITY_FLAVORS_FILE", tmp_path / "gone.yaml", "No such file or directory"),
    ):
        result = run_in(tmp_path, "serve", "--port", "1", **{variable: str(path)})
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("invalid capacity file:")
        assert str(path) in lines[0]
        assert reason in lines[0]


def test_status_reads_the_capacity_files_as_serve_does(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite"
    migrations.upgrade(url)
    flavors = tmp_path / "flavors.yaml"
    flavors.write_text("m1:\n  vcpus: 1\n  memory_mb: 512\n")
    env = {"PLACEMENT_DATABASE_URL": url, "PLACEMENT_CAPACITY_FLAVORS_FILE": str(flavors)}
    good = run_in(tmp_path, "status", COLUMNS="300", **env)
    assert _row(good.stdout, "Capacity files") == ["Success", f"{flavors}: 1 flavors"]
    flavors.write_text("m1:\n  vcpus: one\n  memory_mb: 512\n")
    bad = run_in(tmp_path, "status", COLUMNS="300", **env)
    assert bad.returncode == 2
    result, details = _row(bad.stdout, "Capacity files")
    assert result == "Failure"
    assert details.startswith(f"{flavors}: m1.vcpus: Input should be a valid integer")


def _row(table: str, check: str) -> list[str]:
    """The result and details cells of a check's row in the status table."""
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if cells[0] == check:
            return cells[1:]
    raise AssertionError(f"no {check!r} row in:\n{table}")
