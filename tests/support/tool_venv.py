"""Command-line tools from PyPI in virtualenvs of their own, cached under var/tools.

Tools such as the ``openstack`` CLI or openapi-python-client pin versions of
libraries this project also uses, so they never share its venv. A venv is
keyed by its requirements, built once (under a file lock, so concurrent test
workers wait for one build) and reused by later runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "var" / "tools"


def tool_venv(name: str, requirements: list[str]) -> Path:
    """The ``bin`` directory of a venv with ``requirements`` installed."""
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]
    venv = TOOLS / f"{name}-{key}"
    TOOLS.mkdir(parents=True, exist_ok=True)
    with (TOOLS / f"{name}-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = venv / ".installed"
        if not ready.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            install = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *requirements]
            result = subprocess.run(install, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"pip install {requirements} failed:\n{result.stderr[-3000:]}")
            ready.touch()
    return venv / "bin"
