"""What a request asks of providers' traits and aggregates, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TraitFilter:
    """Required traits as AND-of-ORs, plus forbidden traits."""

    any_of: list[frozenset[str]] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)

    @property
    def names(self) -> set[str]:
        found = set(self.forbidden)
        for group in self.any_of:
            found |= group
        return found

    def is_empty(self) -> bool:
        return not self.any_of and not self.forbidden


@dataclass
class AggregateFilter:
    """member_of: each entry of ``any_of`` is an OR-set; entries AND together."""

    any_of: list[frozenset[str]] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)

    def is_empty(self) -> bool:
        return not self.any_of and not self.forbidden
