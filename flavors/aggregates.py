"""What the operator tells about a Placement aggregate (Nova keeps it in its database)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AggregateConfig(BaseModel):
    """What the scheduler knows about one Placement aggregate."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    availability_zone: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
