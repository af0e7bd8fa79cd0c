"""The move request: a new host for an existing consumer (``POST /v1/move``).

Moves follow Nova's: cold migration (``migrate``), ``live-migrate``, ``resize``
(a new flavor or amounts; the same host when ``allow_same_host``) and
``evacuate`` (the source host is down). The consumer's allocations move to a
migration consumer whose uuid is derived from the consumer's, so every scheduler
process (and one restarted meanwhile) finds the move to confirm or revert.
"""

from __future__ import annotations

import uuid
from typing import Literal, Self
from uuid import UUID

from pydantic import Field, model_validator

from flavors.flavor import Flavor
from scheduler.request.spec import Amount, Hints, ResourceClassName, StrictModel

MoveKind = Literal["migrate", "live-migrate", "resize", "evacuate"]

# uuid5 namespace of migration consumers: one per consumer, one move at a time.
MIGRATIONS = UUID("6f1d3c52-8a0e-4b7e-9d2f-5c4a1e7b9f30")


def migration_uuid(consumer: str) -> str:
    """The consumer that holds ``consumer``'s source allocations while it moves."""
    return str(uuid.uuid5(MIGRATIONS, str(UUID(consumer))))


class MoveRequest(StrictModel):
    consumer_uuid: UUID
    kind: MoveKind
    flavor: Flavor | None = Field(
        default=None,
        description=(
            "resize: the new flavor. Other kinds: the consumer's flavor, for the filters "
            "that read extra specs. Without flavor and resources, the amounts the consumer "
            "holds now."
        ),
    )
    resources: dict[ResourceClassName, Amount] = Field(
        default_factory=dict, description="Amounts, on top of the flavor's (resize)."
    )
    allow_same_host: bool = Field(
        default=False,
        description="migrate and resize: the source host may be chosen (it needs room for both).",
    )
    hints: Hints = Field(default_factory=Hints)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.kind == "resize" and self.flavor is None and not self.resources:
            raise ValueError("a resize needs the new flavor or resources")
        if self.allow_same_host and self.kind in ("live-migrate", "evacuate"):
            raise ValueError(f"allow_same_host does not apply to {self.kind}")
        return self
