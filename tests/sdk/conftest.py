"""A Python client generated from openapi.yaml by openapi-python-client.

The client is generated once per version of openapi.yaml and kept under
var/sdk/<hash of openapi.yaml>; the generator runs from a venv of its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.server import LiveServer, live_server
from tests.support.tool_venv import ROOT, tool_venv

GENERATOR = ["openapi-python-client==0.29.1"]
PACKAGE = "placement_openapi_client"  # not placement_client: a project package may use it


def generated_client_dir() -> Path:
    spec = ROOT / "openapi.yaml"
    target = ROOT / "var" / "sdk" / hashlib.sha256(spec.read_bytes()).hexdigest()[:16]
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / PACKAGE / "__init__.py").exists():
            _generate(spec, target)
    return target


def _generate(spec: Path, target: Path) -> None:
    generator = tool_venv("openapi-python-client", GENERATOR) / "openapi-python-client"
    building = target.with_name(target.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True, exist_ok=True)
    config = building / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run on the generated code
    command = [str(generator), "generate", "--path", str(spec), "--meta", "none"]
    command += ["--output-path", str(building / PACKAGE), "--overwrite", "--config", str(config)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)


@pytest.fixture(scope="session")
def sdk() -> ModuleType:
    sys.path.insert(0, str(generated_client_dir()))
    return importlib.import_module(PACKAGE)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    with live_server(f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}") as running:
        yield running
