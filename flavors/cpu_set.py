"""Nova's CPU set syntax (``0-3,8,^2``): used by the agent's ``cpu_dedicated_set`` /
``cpu_shared_set`` and by the flavor's ``hw:cpu_dedicated_mask`` / ``hw:numa_cpus.N``."""

from __future__ import annotations

import re

_ITEM = re.compile(r"^(?P<exclude>\^)?(?P<first>\d+)(?:-(?P<last>\d+))?$")


class CpuSetError(ValueError):
    """The text is not a CPU set in Nova's syntax, or names a CPU past the limit."""


def parse_cpu_set(text: str, limit: int) -> frozenset[int]:
    """The CPUs included minus those excluded (``^N``); every id must be below ``limit``,
    which also bounds the work a hostile range (``0-999999999``) could cause."""
    included: set[int] = set()
    excluded: set[int] = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        match = _ITEM.match(item)
        if match is None:
            raise CpuSetError(f"{item!r} in {text!r} is not N, N-M, ^N or ^N-M")
        first = int(match["first"])
        last = int(match["last"]) if match["last"] is not None else first
        if first > last:
            raise CpuSetError(f"range {item!r} in {text!r} runs backwards")
        if last >= limit:
            raise CpuSetError(f"CPU {last} in {text!r} is past the highest allowed ({limit - 1})")
        (excluded if match["exclude"] else included).update(range(first, last + 1))
    return frozenset(included - excluded)


def exclusions_only(text: str) -> bool:
    """``^0-1``: a mask that names only what it leaves out (Nova's dedicated mask form)."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    return bool(items) and all(item.startswith("^") for item in items)


def format_cpu_set(cpus: frozenset[int] | set[int]) -> str:
    """The shortest N-M,K spelling, for messages and docs."""
    ordered = sorted(cpus)
    parts: list[str] = []
    start = previous = None
    for cpu in ordered:
        if previous is not None and cpu == previous + 1:
            previous = cpu
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = cpu
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ",".join(parts)
