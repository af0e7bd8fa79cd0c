"""GET /capacity (an extension of this service): query and response models."""

from __future__ import annotations

from pydantic import Field

from placement_api.web.schemas.common import RequestModel, ResponseModel

_BREAKDOWN = "(host|aggregate|az)"
BY_PATTERN = f"^{_BREAKDOWN}(,{_BREAKDOWN})*$"


class CapacityQuery(RequestModel):
    """A flavor as a candidates request's unsuffixed group, and the breakdowns wanted."""

    resources: str | None = None
    required: str | None = None
    member_of: str | None = None
    by: str | None = Field(default=None, pattern=BY_PATTERN)
    include_unavailable: str | None = Field(
        default=None,
        pattern="^(true|false)$",
        description="`true`: count hosts disabled or down too (default `false`).",
    )


class HostResource(ResponseModel):
    total: int
    reserved: int
    allocation_ratio: float = Field(
        description="Weighted by total - reserved when several providers of a tree have it."
    )
    capacity: int = Field(description="(total - reserved) * allocation_ratio, floored.")
    used: int
    free: int = Field(description="capacity - used; negative when over capacity.")


class ClassSummary(ResponseModel):
    total: int
    reserved: int
    capacity: int
    used: int
    free: int
    overcommitted_share: float = Field(
        description="The part of used beyond total - reserved (summed per provider), over used."
    )


class CapacityHost(ResponseModel):
    uuid: str
    name: str
    fits: int | None = Field(default=None, description="With `resources`: this host alone.")
    disabled: bool = Field(description="Its root provider holds COMPUTE_STATUS_DISABLED.")
    down: bool = Field(description="Its agent missed its heartbeats (docs/liveness.md).")
    consumers: int = Field(
        description="Consumers (instances, migrations) holding an allocation in its tree."
    )
    aggregates: list[str]
    availability_zones: list[str]
    resources: dict[str, HostResource]


class CapacityGroup(ResponseModel):
    hosts: int = Field(description="How many hosts the group has.")
    fits: int | None = Field(default=None, description="With `resources`.")
    resources: dict[str, ClassSummary]


class CapacityAggregate(CapacityGroup):
    uuid: str
    name: str | None
    availability_zone: str | None


class CapacityZone(CapacityGroup):
    name: str


class SharingProvider(ResponseModel):
    uuid: str
    name: str
    hosts: int = Field(description="How many hosts it serves.")
    resources: dict[str, HostResource]


class Unavailable(ResponseModel):
    """Hosts disabled or down: left out of every figure unless `include_unavailable=true`."""

    hosts: int = Field(description="Hosts disabled, down or both.")
    disabled: int
    down: int
    included: bool = Field(description="Whether they are counted in this answer's figures.")
    fits: int | None = Field(
        default=None,
        description="With `resources`: instances that fit only because of them (left out: "
        "how many more would fit with them; included: how many of `fits` need them).",
    )


class CapacityReport(ResponseModel):
    """Keys of breakdowns not asked for in `by` are absent; `fits` keys need `resources`;
    `hosts` and `sharing_providers` need policy `placement:capacity:hosts:read`."""

    fits: int | None = Field(default=None, description="With `resources`: the whole cloud.")
    counting: str
    resource_classes: dict[str, ClassSummary]
    hosts: list[CapacityHost] | None = None
    aggregates: list[CapacityAggregate] | None = None
    availability_zones: list[CapacityZone] | None = None
    sharing_providers: list[SharingProvider] | None = None
    unavailable: Unavailable
