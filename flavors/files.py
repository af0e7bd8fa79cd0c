"""The flavors file: YAML, a mapping of flavor name to Nova's flavor fields, e.g.::

    m1.small:
      vcpus: 1
      memory_mb: 2048
      root_gb: 20
    gpu.large:
      vcpus: 16
      memory_mb: 65536
      extra_specs:
        resources:VGPU: "1"
        trait:HW_CPU_X86_AVX2: required

Fields: ``vcpus``, ``memory_mb`` (required), ``root_gb``, ``ephemeral_gb``,
``swap`` (MB) and ``extra_specs`` (``resources[N]:CLASS``, ``trait[N]:NAME``,
``group_policy``, and whatever the filters read).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import TypeAdapter, ValidationError

from flavors.file_errors import validation_reason, yaml_reason
from flavors.flavor import Flavor

_FLAVORS = TypeAdapter(dict[str, Flavor])


class FlavorsFileError(Exception):
    """A one-line reason the flavor could not be read."""


def load_flavors(path: Path, setting: str) -> dict[str, Flavor]:
    """Every flavor of the file, by name; ``setting`` names where the path came
    from (the scheduler's option, the API's setting) in an unreadable file's message."""
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise FlavorsFileError(
            f"cannot read the flavors file {path} ({setting}): {exc.strerror}"
        ) from None
    except yaml.YAMLError as exc:
        raise FlavorsFileError(f"{path} is not valid YAML: {yaml_reason(exc)}") from None
    try:
        return _FLAVORS.validate_python(document or {})
    except ValidationError as exc:
        raise FlavorsFileError(f"{path}: {validation_reason(exc)}") from None
