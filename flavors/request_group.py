"""One Placement request group, as a flavor or a schedule request asks for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestGroup:
    """One Placement request group; ``suffix`` is "" for the unnumbered one."""

    suffix: str
    resources: dict[str, int]
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[tuple[str, ...], ...] = ()
    in_tree: str | None = None
    not_member_of: frozenset[str] = frozenset()
