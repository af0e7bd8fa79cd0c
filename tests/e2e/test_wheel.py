"""The built wheel, installed in a fresh virtualenv away from the source tree,
migrates a database, serves and answers: nothing depends on a checkout.

Slow (a build and an install of every dependency, from pip's cache when
warm), so one test does it all; every step is bounded by a timeout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.server import free_port, wait_until_up

REPOSITORY = Path(__file__).resolve().parents[2]
_NOT_SOURCE = shutil.ignore_patterns(
    ".venv", ".git", "var", "build", "*.egg-info", "__pycache__", ".*_cache", "tests", "bench"
)


def _run(*command: str | Path, cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    result = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-4000:]}"
    return result.stdout


@pytest.mark.wheel
def test_wheel_installs_migrates_and_serves_outside_the_source_tree(tmp_path: Path) -> None:
    # Build from a copy, so the build leaves nothing in the checkout.
    source = tmp_path / "source"
    shutil.copytree(REPOSITORY, source, ignore=_NOT_SOURCE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLACEMENT_", "PYTHON"))}
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, source,
         cwd=tmp_path, env=env, timeout=300)  # fmt: skip
    [wheel] = dist.glob("placement_api-*.whl")

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path, env=env)
    # The agent's libvirt binding is the "agent" extra, as on a compute node.
    _run(venv / "bin" / "python", "-m", "pip", "install", "-q", f"{wheel}[agent]",
         cwd=tmp_path, env=env, timeout=600)  # fmt: skip

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env["PLACEMENT_DATABASE_URL"] = f"sqlite+aiosqlite:///{elsewhere}/state/placement.sqlite"
    where = "import placement_api; print(placement_api.__file__)"
    located = _run(venv / "bin" / "python", "-c", where, cwd=elsewhere, env=env)
    assert located.startswith(str(venv))
    _run(venv / "bin" / "placement-api", "db", "upgrade", cwd=elsewhere, env=env)
    assert "(current)" in _run(venv / "bin" / "placement-api", "db", "current",
                               cwd=elsewhere, env=env)  # fmt: skip
    for program in ("placement-agent", "placement-scheduler"):
        assert "Usage" in _run(venv / "bin" / program, "--help", cwd=elsewhere, env=env)

    port = free_port()
    process = subprocess.Popen(
        [venv / "bin" / "placement-api", "serve", "--port", str(port)],
        cwd=elsewhere,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, timeout=180)
        assert httpx.get(f"{url}/healthcheck").text == "OK"
        headers = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
        created = httpx.post(f"{url}/resource_providers", json={"name": "h1"}, headers=headers)
        assert created.status_code == 200, created.text
        listed = httpx.get(f"{url}/resource_providers", headers=headers).json()
        assert [p["name"] for p in listed["resource_providers"]] == ["h1"]
    finally:
        process.terminate()
        process.wait(timeout=30)
