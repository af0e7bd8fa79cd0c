"""Shell blocks of the Markdown docs that the tests run.

A fenced block whose info string is ``sh session`` is run, in order with the
file's other session blocks, by one ``bash -euo pipefail`` against a live
server whose URL is in ``PLACEMENT_URL``; ``sh osc`` blocks also need the
``openstack`` CLI; ``python sdk`` blocks run with the client generated from
openapi.yaml (tests/sdk). Other blocks (plain ``sh``) are shown, never run.
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


def documents_with(tag: str) -> list[Path]:
    candidates = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [path for path in candidates if blocks(path, tag)]
