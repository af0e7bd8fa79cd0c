"""What a database holds, counted by SQL on either schema (the tables and
columns counted are named alike in both), to compare both sides of a move."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, text

IS_CUSTOM = "SUBSTR(name, 1, 7) = 'CUSTOM_'"
COUNTS = {
    "custom resource classes": f"SELECT COUNT(*) FROM resource_classes WHERE {IS_CUSTOM}",
    "custom traits": f"SELECT COUNT(*) FROM traits WHERE {IS_CUSTOM}",
    "providers": "SELECT COUNT(*) FROM resource_providers",
    "inventories": "SELECT COUNT(*) FROM inventories",
    "aggregates": "SELECT COUNT(*) FROM placement_aggregates",
    "provider aggregates": "SELECT COUNT(*) FROM resource_provider_aggregates",
    "provider traits": "SELECT COUNT(*) FROM resource_provider_traits",
    "projects": "SELECT COUNT(*) FROM projects",
    "users": "SELECT COUNT(*) FROM users",
    "consumer types": "SELECT COUNT(*) FROM consumer_types",
    "consumers": "SELECT COUNT(*) FROM consumers",
    "allocations": "SELECT COUNT(*) FROM allocations",
}
SUMS = {
    "provider generations": "SELECT SUM(generation) FROM resource_providers",
    "consumer generations": "SELECT SUM(generation) FROM consumers",
}
USAGE_BY_CLASS = (
    "SELECT rc.name, SUM(a.used) FROM allocations a "
    "JOIN resource_classes rc ON rc.id = a.resource_class_id GROUP BY rc.name"
)
# Ours only: inventories whose kept usage differs from their allocations' sum.
STALE_USAGE = (
    "SELECT COUNT(*) FROM inventories i WHERE i.used <> COALESCE(("
    "SELECT SUM(a.used) FROM allocations a WHERE a.resource_provider_id = i.resource_provider_id"
    " AND a.resource_class_id = i.resource_class_id), 0)"
)
KEPT_USAGE_BY_CLASS = (
    "SELECT rc.name, SUM(i.used) FROM inventories i "
    "JOIN resource_classes rc ON rc.id = i.resource_class_id GROUP BY rc.name"
)


@dataclass(frozen=True)
class Census:
    counts: dict[str, int]
    usage_by_class: dict[str, int]

    def is_empty(self) -> bool:
        return not any(self.counts.values())

    def differences(self, other: Census) -> list[str]:
        """Each figure that differs, as 'name: self != other'."""
        found = [
            f"{name}: {value} != {other.counts.get(name)}"
            for name, value in self.counts.items()
            if other.counts.get(name) != value
        ]
        for name in sorted(set(self.usage_by_class) | set(other.usage_by_class)):
            mine, theirs = self.usage_by_class.get(name, 0), other.usage_by_class.get(name, 0)
            if mine != theirs:
                found.append(f"{name} allocated: {mine} != {theirs}")
        return found


def take_census(connection: Connection) -> Census:
    counts = {name: _number(connection, sql) for name, sql in {**COUNTS, **SUMS}.items()}
    return Census(counts=counts, usage_by_class=_usage(connection, USAGE_BY_CLASS))


def kept_usage_problems(connection: Connection) -> list[str]:
    """Where our derived ``inventories.used`` disagrees with the allocations."""
    problems = []
    stale = _number(connection, STALE_USAGE)
    if stale:
        problems.append(f"{stale} inventories whose used differs from their allocations' sum")
    allocated = _usage(connection, USAGE_BY_CLASS)
    kept = {name: used for name, used in _usage(connection, KEPT_USAGE_BY_CLASS).items() if used}
    if kept != allocated:
        problems.append(f"used by class {kept} differs from allocated {allocated}")
    return problems


def _number(connection: Connection, sql: str) -> int:
    return int(connection.execute(text(sql)).scalar() or 0)


def _usage(connection: Connection, sql: str) -> dict[str, int]:
    return {name: int(used) for name, used in connection.execute(text(sql))}
