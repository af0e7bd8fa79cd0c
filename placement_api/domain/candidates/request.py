"""A GET /allocation_candidates request as plain data: its request groups
and the request-wide rules. The web layer parses the query string into it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placement_api.domain.filters import AggregateFilter, TraitFilter


@dataclass(frozen=True)
class RequestGroup:
    """One request group. ``suffix`` is "" for the unsuffixed group."""

    suffix: str
    resources: Mapping[str, int] = field(default_factory=dict)
    required: TraitFilter = field(default_factory=TraitFilter)
    member_of: AggregateFilter = field(default_factory=AggregateFilter)
    in_tree: str | None = None

    @property
    def granular(self) -> bool:
        """Suffixed groups must be met by a single provider."""
        return self.suffix != ""


@dataclass(frozen=True)
class CandidateRequest:
    groups: tuple[RequestGroup, ...]
    limit: int | None = None
    group_policy: str | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtrees: tuple[frozenset[str], ...] = ()
    # Before 1.29 one candidate may not use two providers of the same tree.
    nested_aware: bool = True

    @property
    def isolate(self) -> bool:
        return self.group_policy == "isolate"

    @property
    def requested_classes(self) -> set[str]:
        return {name for group in self.groups for name in group.resources}
