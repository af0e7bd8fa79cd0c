"""A resolved allocation write: the rows its consumers hold and want."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placement_api.domain.consumers import ConsumerClaim, ConsumerSet

# (provider id, resource class id)
Slot = tuple[int, int]


@dataclass(frozen=True)
class Row:
    """One allocation row: a consumer's amount of a class from a provider."""

    consumer_id: int
    provider_id: int
    class_id: int
    used: int

    @property
    def slot(self) -> Slot:
        return (self.provider_id, self.class_id)


@dataclass
class ClaimPlan:
    """A write, resolved and with its consumers locked, ready to apply."""

    claims: Sequence[ConsumerClaim]
    consumers: ConsumerSet
    provider_ids: dict[str, int]
    class_ids: dict[str, int]
    held: list[Row]
    # By id, of every provider and class named or held: what the change
    # feed and error messages call them.
    provider_uuids: dict[int, str]
    class_names: dict[int, str]

    def wanted(self) -> list[Row]:
        rows: list[Row] = []
        for claim in self.claims:
            consumer_id = self.consumers.by_uuid[claim.uuid].id
            if consumer_id is None:
                continue
            for provider_uuid, amounts in claim.allocations.items():
                provider_id = self.provider_ids[provider_uuid]
                rows.extend(
                    Row(consumer_id, provider_id, self.class_ids[name], amount)
                    for name, amount in amounts.items()
                )
        return rows

    def touched_provider_ids(self) -> set[int]:
        return {row.provider_id for row in self.held} | set(self.provider_ids.values())
