"""The flavors file: YAML, flavor name -> Nova's flavor fields (format and an example:
docs/operations.md, "Flavors file"), read by the scheduler and the capacity report."""

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
