"""docs/configuration.md is generated from the settings classes and current."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "config_reference.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_checked_in_reference_is_current_and_every_setting_is_described() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(ROOT / "docs" / "configuration.md")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr + " (run `make docs`)"


def test_a_new_setting_appears_with_its_variable_type_default_and_bounds() -> None:
    generator = _generator()

    class Example(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="PLACEMENT_EXAMPLE_")
        workers: int | None = Field(default=None, ge=1, description="How many.")

    program = generator.Program("example", Example, "An example.")
    row = generator.program_section(program).splitlines()[-1]
    assert (
        row
        == "| `workers` | `PLACEMENT_EXAMPLE_WORKERS` | int or unset | unset | How many. (≥ 1) |"
    )
