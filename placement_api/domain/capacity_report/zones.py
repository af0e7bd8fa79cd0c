"""Names and availability zones of aggregates, as the operator configured them.

Placement knows aggregates by uuid only; the names and zones come from the
``aggregates`` mapping of a scheduler configuration file
(``PLACEMENT_CAPACITY_AGGREGATES_FILE``). A host is in the zones its root
provider's aggregates name, or in the default zone when they name none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AggregateInfo:
    name: str | None = None
    availability_zone: str | None = None


@dataclass(frozen=True)
class ZoneMap:
    aggregates: Mapping[str, AggregateInfo] = field(default_factory=dict)
    default_zone: str = "nova"

    def info(self, aggregate_uuid: str) -> AggregateInfo:
        return self.aggregates.get(aggregate_uuid, AggregateInfo())

    def zones_of(self, aggregate_uuids: Iterable[str]) -> list[str]:
        named = {zone for uuid in aggregate_uuids if (zone := self.info(uuid).availability_zone)}
        return sorted(named) or [self.default_zone]
