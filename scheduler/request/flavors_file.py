"""Named flavors for ``placement-scheduler schedule --flavor NAME``, from a flavors
file (its format: ``flavors.files``)."""

from __future__ import annotations

from pathlib import Path

from flavors.files import FlavorsFileError, load_flavors
from flavors.flavor import Flavor

FLAVORS_FILE_VARIABLE = "PLACEMENT_SCHEDULER_FLAVORS_FILE"
DEFAULT_FLAVORS_FILE = Path("/etc/placement-scheduler/flavors.yaml")
# How the scheduler's command names the file, for a file it cannot read.
FLAVORS_FILE_SETTING = f"--flavors-file or {FLAVORS_FILE_VARIABLE}"


def load_flavor(path: Path, name: str) -> Flavor:
    flavors = load_flavors(path, FLAVORS_FILE_SETTING)
    if name not in flavors:
        known = ", ".join(sorted(flavors)) or "none"
        raise FlavorsFileError(f"no flavor {name!r} in {path} (it has: {known})")
    return flavors[name]
