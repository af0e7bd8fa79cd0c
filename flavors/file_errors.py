"""One-line reasons an operator's YAML file was refused: the flavors file, and the
API's aggregates file (``placement_api.services.capacity_sources``)."""

from __future__ import annotations

import yaml
from pydantic import ValidationError


def yaml_reason(error: yaml.YAMLError) -> str:
    """What YAML objects to and where; its own message spans lines (a caret)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem and error.problem_mark:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return _one_line(error)


def validation_reason(error: ValidationError) -> str:
    """The first field pydantic refused, dotted, and why."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the document"
    return _one_line(f"{where}: {first['msg']}")


def _one_line(error: Exception | str) -> str:
    return " ".join(str(error).split())
