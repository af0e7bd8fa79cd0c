"""docs/deploy.md's install block, run as written: the wheel ``make dist`` builds
installs, for API nodes and, with the ``agent`` extra, for compute nodes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.blocks import ROOT, blocks

GUIDE = ROOT / "docs" / "deploy.md"
INSTALLED = "/opt/placement"


def test_the_install_block_installs_the_wheel_without_setuptools_warnings(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert "BuildBackendWarning" not in built.stderr  # `make install`/`make dist` stay quiet
    script = blocks(GUIDE, "install")
    assert "pip install" in script
    venv = tmp_path / "opt-placement"
    # Only the install directory is site-specific; the dependencies are the
    # project's own (their install is pip's business), so only the wheel goes in.
    environment = os.environ | {"PIP_NO_DEPS": "1"}
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script.replace(INSTALLED, str(venv))],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    shown = subprocess.run(
        [str(venv / "bin" / "pip"), "show", "placement-api"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Name: placement-api" in shown.stdout
