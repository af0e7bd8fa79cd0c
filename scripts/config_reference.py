"""Write docs/configuration.md from the settings classes of the three programs.

``python scripts/config_reference.py --output docs/configuration.md`` writes it
(``make docs``); ``--check docs/configuration.md`` fails when it is stale
(``make docs-check``; ``make test`` checks it too). Every field of a settings class
is listed, so a new setting appears here once it is added to its class.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from agent.settings import AgentSettings
from placement_api.settings import Settings
from scheduler.settings import SchedulerSettings


@dataclass(frozen=True)
class Program:
    title: str
    settings: type[BaseSettings]
    introduction: str


PROGRAMS = (
    Program(
        "placement-api",
        Settings,
        "The API reads its environment (prefix `PLACEMENT_`). An upstream-style "
        "`placement.conf` (`PLACEMENT_CONFIG_FILE`) can set them too: "
        "[keystone.md](keystone.md) maps its options onto these settings.",
    ),
    Program(
        "placement-agent",
        AgentSettings,
        "Highest first: command-line options (`placement-agent --help`), the environment "
        "(prefix `PLACEMENT_AGENT_`), then a YAML file of these names "
        "(`PLACEMENT_AGENT_CONFIG_FILE`, else `/etc/placement-agent/agent.yaml` when it exists).",
    ),
    Program(
        "placement-scheduler",
        SchedulerSettings,
        "Highest first: command-line options, the environment (prefix "
        "`PLACEMENT_SCHEDULER_`), then the YAML file named by `config_file`. In the "
        "environment lists are comma-separated names and mappings are JSON.",
    ),
)

HEADER = """\
# Configuration reference

Generated from the settings classes by `make docs` (`scripts/config_reference.py`);
`make docs-check` and `make test` fail when this file is stale. Do not edit by
hand: change the field's `description` in the settings class and regenerate.
"""


def type_name(annotation: Any) -> str:
    """A reader's name for a field's type: `int`, `float or unset`, `list of str`, ..."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, UnionType):
        named = [type_name(arg) for arg in args if arg is not NoneType]
        text = " or ".join(named)
        return f"{text} or unset" if NoneType in args else text
    if origin is typing.Literal:
        return " or ".join(f"`{value}`" for value in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"mapping {type_name(args[0])} → {type_name(args[1])}"
    if annotation is SecretStr:
        return "secret str"
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return getattr(annotation, "__name__", str(annotation))


def default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list):
        return f"`{','.join(str(item) for item in value)}`" if value else "empty"
    if isinstance(value, dict):
        return f"`{json.dumps(value)}`" if value else "empty"
    return f"`{value}`"


def constraints_text(field: FieldInfo) -> str:
    """The bounds pydantic enforces (ge, gt, le, lt, pattern), as a reader writes them."""
    words = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    found: list[str] = []
    for item in field.metadata:
        for attribute, sign in words.items():
            bound = getattr(item, attribute, None)
            if bound is not None:
                found.append(f"{sign} {bound}")
        pattern = getattr(item, "pattern", None)
        if pattern is not None:
            found.append(f"matches `{pattern}`")
    return f" ({', '.join(found)})" if found else ""


def escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def env_prefix(settings: type[BaseSettings]) -> str:
    return str(settings.model_config.get("env_prefix", ""))


def program_section(program: Program) -> str:
    prefix = env_prefix(program.settings)
    lines = [
        f"## {program.title}",
        "",
        program.introduction,
        "",
        "| setting | environment variable | type | default | description |",
        "|---|---|---|---|---|",
    ]
    for name, field in program.settings.model_fields.items():
        description = escape(field.description or "") + constraints_text(field)
        lines.append(
            f"| `{name}` | `{prefix}{name.upper()}` | {escape(type_name(field.annotation))} "
            f"| {escape(default_text(field))} | {description} |"
        )
    return "\n".join(lines) + "\n"


def render() -> str:
    return "\n".join([HEADER, *(program_section(program) for program in PROGRAMS)])


def undocumented_fields() -> list[str]:
    return [
        f"{program.settings.__name__}.{name}"
        for program in PROGRAMS
        for name, field in program.settings.model_fields.items()
        if not field.description
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output", type=Path, help="write the reference to this file")
    target.add_argument("--check", type=Path, help="exit 1 when this file is not current")
    args = parser.parse_args(argv)
    missing = undocumented_fields()
    if missing:
        print(f"settings without a description: {', '.join(missing)}", file=sys.stderr)
    text = render()
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        return 0
    if missing:
        return 1
    current = args.check.read_text(encoding="utf-8") if args.check.is_file() else ""
    if current != text:
        print(f"{args.check} is out of date: run `make docs`.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
