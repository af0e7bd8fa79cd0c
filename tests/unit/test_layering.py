"""The layering contracts of `make lint` catch what they are written for:
each is broken on purpose in a copy of the tree, and the check fails naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.check_internals import violations

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("placement_api", "scheduler", "agent", "placement_client", "flavors")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("house")
    for package in PACKAGES:
        if (ROOT / package).is_dir():
            shutil.copytree(
                ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__")
            )
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(command), "--no-cache"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "240"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _append(path: Path, line: str) -> str:
    original = path.read_text()
    path.write_text(original + "\n" + line + "\n")
    return original


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        (
            "placement_api/domain/usages.py",
            "from placement_api.web import rendering  # noqa",
            "The domain imports no web",
        ),
        (
            "placement_api/db/models.py",
            "from placement_api.observability import metrics  # noqa",
            "db imports no domain and no observability",
        ),
        (
            "placement_api/domain/traits.py",
            "import scheduler.settings  # noqa",
            "The API does not import the scheduler",
        ),
        (
            "placement_api/domain/capacity.py",
            "from placement_api.domain import claims  # noqa",
            "No import circles between the modules of a package",
        ),
    ],
)
def test_a_broken_contract_fails_lint_naming_it(
    tree: Path, module: str, line: str, contract: str
) -> None:
    target = tree / module
    original = _append(target, line)
    try:
        result = _lint_imports(tree)
    finally:
        target.write_text(original)
    assert result.returncode == 1, result.stdout
    assert any(
        row.startswith(contract) and row.endswith("BROKEN") for row in result.stdout.splitlines()
    ), result.stdout
    report = result.stdout.split("Broken contracts")[-1]
    assert Path(module).stem in report, report


def test_the_tree_as_committed_keeps_every_contract(tree: Path) -> None:
    result = _lint_imports(tree)
    assert result.returncode == 0, result.stdout


def test_a_library_internal_outside_the_fences_is_reported(tree: Path) -> None:
    assert violations(tree) == []
    target = tree / "placement_api/domain/usages.py"
    original = _append(target, "from oslo_policy import _checks  # noqa")
    try:
        found = violations(tree)
    finally:
        target.write_text(original)
    assert [(use.path, use.what) for use in found] == [
        ("placement_api/domain/usages.py", "imports oslo_policy._checks")
    ]


def test_a_library_internal_inside_a_fence_is_allowed(tree: Path) -> None:
    target = tree / "placement_api/db/driver.py"
    original = _append(target, "from oslo_policy import _checks  # noqa")
    try:
        assert violations(tree) == []
    finally:
        target.write_text(original)
