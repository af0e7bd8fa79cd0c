"""Named flavors for ``placement-scheduler schedule --flavor NAME``.

The file is YAML: a mapping of flavor name to Nova's flavor fields, e.g.::

    m1.small:
      vcpus: 1
      memory_mb: 2048
      root_gb: 20
    gpu.large:
      vcpus: 16
      memory_mb: 65536
      root_gb: 100
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

from scheduler.request.flavor import Flavor

FLAVORS_FILE_VARIABLE = "PLACEMENT_SCHEDULER_FLAVORS_FILE"
DEFAULT_FLAVORS_FILE = Path("/etc/placement-scheduler/flavors.yaml")

_FLAVORS = TypeAdapter(dict[str, Flavor])


class FlavorsFileError(Exception):
    """A one-line reason the flavor could not be read."""


def load_flavors(path: Path) -> dict[str, Flavor]:
    """Every flavor of the file, by name."""
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise FlavorsFileError(
            f"cannot read the flavors file {path}: {exc.strerror}; "
            f"give --flavors-file or set {FLAVORS_FILE_VARIABLE}"
        ) from None
    except yaml.YAMLError as exc:
        raise FlavorsFileError(f"{path} is not valid YAML: {exc}") from None
    try:
        return _FLAVORS.validate_python(document or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise FlavorsFileError(f"{path}: {where}: {first['msg']}") from None


def load_flavor(path: Path, name: str) -> Flavor:
    flavors = load_flavors(path)
    if name not in flavors:
        known = ", ".join(sorted(flavors)) or "none"
        raise FlavorsFileError(f"no flavor {name!r} in {path} (it has: {known})")
    return flavors[name]
