"""The flavors file: YAML, flavor name -> Nova's flavor fields (format and an example:
docs/operations.md, "Flavors file"), read by the scheduler and the capacity report."""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from flavors.file_errors import UnreadableFile, read_yaml, validation_reason
from flavors.flavor import Flavor

_FLAVORS = TypeAdapter(dict[str, Flavor])


class FlavorsFileError(Exception):
    """A one-line reason the flavor could not be read."""


def load_flavors(path: Path, setting: str) -> dict[str, Flavor]:
    """Every flavor of the file, by name; ``setting`` names where the path came
    from (the scheduler's option, the API's setting) in an unreadable file's message."""
    try:
        document = read_yaml(path, "flavors file", setting)
    except UnreadableFile as exc:
        raise FlavorsFileError(str(exc)) from None
    try:
        return _FLAVORS.validate_python(document or {})
    except ValidationError as exc:
        raise FlavorsFileError(f"{path}: {validation_reason(exc)}") from None
