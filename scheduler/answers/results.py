"""Wire models of the scheduler service's answers (and the release request)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from scheduler.answers.explain import Explanation
from scheduler.placement.client import AllocationRequest, ProviderAllocation


class ProviderRef(BaseModel):
    uuid: str
    name: str


class Alternate(BaseModel):
    provider: ProviderRef
    allocation_request: AllocationRequest


class Selection(BaseModel):
    consumer_uuid: str
    provider: ProviderRef
    allocations: dict[str, ProviderAllocation] = Field(
        description="What was written to Placement for the consumer, by provider uuid."
    )
    mappings: dict[str, list[str]] = Field(default_factory=dict)
    alternates: list[Alternate] = Field(default_factory=list)


class ScheduleResponse(BaseModel):
    selections: list[Selection]
    explanation: Explanation
    dry_run: bool = Field(default=False, description="True: decided only; nothing was claimed.")


class MoveResponse(BaseModel):
    selection: Selection = Field(description="The destination, claimed for the consumer.")
    migration_uuid: str = Field(description="The consumer now holding the source allocations.")
    explanation: Explanation


class MoveFinished(BaseModel):
    consumer_uuid: str
    migration_uuid: str
    outcome: Literal["confirmed", "reverted"]
    allocations: dict[str, ProviderAllocation] = Field(
        description="What the consumer holds now, by provider uuid."
    )


class ReleaseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    consumer_uuids: list[uuid.UUID] = Field(min_length=1)


class ReleaseResponse(BaseModel):
    released: list[str]
    not_found: list[str]


class ErrorEntry(BaseModel):
    status: int
    title: str
    detail: str
    code: str
    request_id: str


class ErrorBody(BaseModel):
    errors: list[ErrorEntry]


class NoValidHostBody(ErrorBody):
    explanation: Explanation


class PluginInfo(BaseModel):
    name: str
    description: str
    position: int


class FilterInfo(PluginInfo):
    runs_on_forced_hosts: bool


class WeigherInfo(PluginInfo):
    multiplier: float = Field(description="Effective multiplier, sign of the strategy included.")


class FiltersResponse(BaseModel):
    enabled: list[FilterInfo]
    available: list[str]


class WeighersResponse(BaseModel):
    strategy: str
    enabled: list[WeigherInfo]
    available: list[str]
