"""Reading an operator's YAML file (the flavors file, the API's aggregates
file) and the one-line reasons one was refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError


class UnreadableFile(Exception):
    """One line: the file could not be read, or is not YAML."""


def read_yaml(path: Path, what: str, setting: str) -> Any:
    """The file's YAML document (None when empty); ``what`` and ``setting`` name
    the file in the one-line reason an unreadable one gets."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UnreadableFile(f"cannot read the {what} {path} ({setting}): {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UnreadableFile(f"{path} is not valid YAML: {yaml_reason(exc)}") from None


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
