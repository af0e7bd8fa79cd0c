"""Shell blocks of the Markdown docs that the tests run.

A fenced block whose info string is ``sh session`` is run, in order with the
file's other session blocks, by one ``bash -euo pipefail`` against a live
server whose URL is in ``PLACEMENT_URL``; ``sh osc`` blocks also need the
``openstack`` CLI; ``python sdk`` blocks run with the client generated from
openapi.yaml (tests/sdk). Other blocks (plain ``sh``) are shown, never run.
A command that is meant to fail says so in a comment naming the status
(``# 409 ...``): the errors a session prints must be exactly those, in order.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(
    r"^```(?P<language>\w+) (?P<tags>[\w ]+)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL
)


def blocks(path: Path, tag: str, language: str = "sh") -> str:
    """The file's ``language`` blocks tagged ``tag``, joined into one script."""
    text = path.read_text(encoding="utf-8")
    found = [
        m["body"]
        for m in _FENCE.finditer(text)
        if m["language"] == language and tag in m["tags"].split()
    ]
    return "\n".join(found)


_ANNOTATED_STATUS = re.compile(r"#.*?\b([45]\d\d)\b")


def annotated_error_statuses(script: str) -> list[int]:
    """The error statuses a script's comments announce, in order (``# 409, ...``)."""
    return [int(m.group(1)) for m in map(_ANNOTATED_STATUS.search, script.splitlines()) if m]


def documents_with(tag: str) -> list[Path]:
    candidates = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [path for path in candidates if blocks(path, tag)]
