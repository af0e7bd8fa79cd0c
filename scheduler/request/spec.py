"""The schedule request: what the caller asks for, validated.

``ScheduleRequest`` is the wire model of ``POST /v1/schedule``. It turns into
a ``ResourceRequest`` (what Placement is asked for, see ``query``) and the
facts the filters and weighers read (hints, availability zone, image
properties, flavor extra specs).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Literal, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from flavors.extra_specs import UnsupportedExtraSpec
from flavors.flavor import Flavor, flavor_groups
from flavors.hardware import IMAGE_PROPERTIES
from flavors.pci_alias import PciAlias
from flavors.request_group import RequestGroup

ResourceClassName = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9_]+$", max_length=255)]
TraitName = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9_]+$", max_length=255)]
GroupSuffix = Annotated[str, StringConstraints(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]
Amount = Annotated[int, Field(ge=1)]
AnyOfAggregates = Annotated[list[UUID], Field(min_length=1)]

MAX_INSTANCES_PER_REQUEST = 1000


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GroupPolicy(StrEnum):
    AFFINITY = "affinity"
    ANTI_AFFINITY = "anti-affinity"
    SOFT_AFFINITY = "soft-affinity"
    SOFT_ANTI_AFFINITY = "soft-anti-affinity"


class ServerGroupHint(StrictModel):
    """A server group. Placement keeps its members (every claim names the group,
    docs/server-groups.md); ``members`` adds consumers the caller knows of that
    were placed without naming it."""

    uuid: UUID
    policy: GroupPolicy
    name: str | None = Field(default=None, description="Used in explanations.")
    members: list[UUID] = Field(default_factory=list)
    max_server_per_host: int = Field(
        default=1, ge=1, description="For anti-affinity: members allowed on one host."
    )

    @property
    def label(self) -> str:
        return self.name or str(self.uuid)


class Hints(StrictModel):
    same_host: list[UUID] = Field(
        default_factory=list, description="Go to a host running one of these consumers."
    )
    different_host: list[UUID] = Field(
        default_factory=list, description="Avoid hosts running any of these consumers."
    )
    group: ServerGroupHint | None = None
    force_hosts: list[str] = Field(
        default_factory=list, description="Host (root provider) names; filters are skipped."
    )
    force_nodes: list[str] = Field(
        default_factory=list, description="Root provider names or uuids; filters are skipped."
    )
    ignore_hosts: list[str] = Field(default_factory=list, description="Host names to avoid.")

    @property
    def forces_hosts(self) -> bool:
        return bool(self.force_hosts or self.force_nodes)


class GranularGroup(StrictModel):
    """A suffixed request group: its resources come from one provider."""

    suffix: GroupSuffix
    resources: dict[ResourceClassName, Amount] = Field(default_factory=dict)
    required_traits: list[TraitName] = Field(default_factory=list)
    forbidden_traits: list[TraitName] = Field(default_factory=list)
    member_of: list[AnyOfAggregates] = Field(default_factory=list)
    in_tree: UUID | None = None


# hw_cpu_policy, hw_numa_nodes, hw_mem_page_size... pass through as extras and are read
# with the flavor's extra specs (flavors.hardware).
class ImageProperties(BaseModel):
    """The image properties the filters understand; others are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    hw_architecture: str | None = None
    hw_emulation_architecture: str | None = None


class ScheduleRequest(StrictModel):
    resources: dict[ResourceClassName, Amount] = Field(default_factory=dict)
    required_traits: list[TraitName] = Field(default_factory=list)
    forbidden_traits: list[TraitName] = Field(default_factory=list)
    member_of: list[AnyOfAggregates] = Field(
        default_factory=list,
        description="Each entry is a list of aggregate uuids the host must be in one of.",
    )
    granular_groups: list[GranularGroup] = Field(default_factory=list)
    group_policy: Literal["none", "isolate"] | None = None
    num_instances: int | None = Field(default=None, ge=1, le=MAX_INSTANCES_PER_REQUEST)
    consumer_uuids: list[UUID] = Field(
        default_factory=list, description="One per instance; generated when absent."
    )
    project_id: str | None = Field(default=None, min_length=1, max_length=255)
    user_id: str | None = Field(default=None, min_length=1, max_length=255)
    availability_zone: str | None = None
    hints: Hints = Field(default_factory=Hints)
    flavor: Flavor | None = None
    image_properties: ImageProperties | None = None
    dry_run: bool = Field(
        default=False,
        description="Decide and explain as for real, but claim nothing.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.num_instances is None:
            self.num_instances = len(self.consumer_uuids) or 1
        if self.consumer_uuids and len(self.consumer_uuids) != self.num_instances:
            raise ValueError(
                f"consumer_uuids has {len(self.consumer_uuids)} entries "
                f"but num_instances is {self.num_instances}"
            )
        if len(set(self.consumer_uuids)) != len(self.consumer_uuids):
            raise ValueError("consumer_uuids must be distinct")
        if not self.consumer_uuids:
            self.consumer_uuids = [uuid.uuid4() for _ in range(self.num_instances)]
        resource_request(self)  # rejects contradictions before anything is sent
        return self

    @property
    def extra_specs(self) -> dict[str, str]:
        return dict(self.flavor.extra_specs) if self.flavor else {}

    @property
    def image(self) -> dict[str, object]:
        """The image properties given, the ones only passed through included."""
        if self.image_properties is None:
            return {}
        return self.image_properties.model_dump(exclude_none=True)


@dataclass(frozen=True)
class ResourceRequest:
    groups: tuple[RequestGroup, ...]
    group_policy: str | None = None

    @property
    def unnumbered(self) -> RequestGroup:
        return next(group for group in self.groups if not group.suffix)


def resource_request(
    spec: ScheduleRequest,
    in_tree: str | None = None,
    member_of: Sequence[tuple[str, ...]] = (),
    not_member_of: Iterable[str] = (),
    pci_aliases: list[PciAlias] | None = None,
) -> ResourceRequest:
    """Merge the flavor's amounts and traits with the explicit ones (explicit win);
    ``in_tree`` and the aggregate terms (from the plugins' prepare hooks) go to the
    unnumbered group. ``pci_aliases`` None: ``pci_passthrough:alias`` is only checked."""
    from_flavor = flavor_groups(spec.flavor, spec.image, pci_aliases) if spec.flavor else None
    shaping = sorted(key for key in spec.image if key.startswith(IMAGE_PROPERTIES))
    if from_flavor is None and shaping:
        raise UnsupportedExtraSpec(
            shaping[0], "an image property that shapes the guest needs a flavor to shape"
        )
    resources = dict(from_flavor.resources if from_flavor else {})
    if from_flavor is not None and (twice := sorted(from_flavor.shaped & spec.resources.keys())):
        raise ValueError(
            f"resources {', '.join(twice)}: the flavor's hw: specs already ask for them "
            "(guest cells or dedicated CPUs); give them there"
        )
    resources.update(spec.resources)
    resources = {name: amount for name, amount in resources.items() if amount > 0}
    required = set(spec.required_traits) | (from_flavor.required if from_flavor else set())
    forbidden = set(spec.forbidden_traits) | (from_flavor.forbidden if from_flavor else set())
    _reject_contradiction("", required, forbidden)
    groups = [
        RequestGroup(
            suffix="",
            resources=resources,
            required=frozenset(required),
            forbidden=frozenset(forbidden),
            member_of=tuple(tuple(str(a) for a in any_of) for any_of in spec.member_of)
            + tuple(member_of),
            in_tree=in_tree,
            not_member_of=frozenset(not_member_of),
        )
    ]
    groups.extend(_granular(spec, from_flavor.granular if from_flavor else ()))
    if not any(group.resources for group in groups):
        raise ValueError("the request asks for no resources")
    policy = spec.group_policy or (from_flavor.group_policy if from_flavor else None)
    if policy is None and len(groups) > 2:
        policy = "none"
    return ResourceRequest(groups=tuple(groups), group_policy=policy)


def _granular(spec: ScheduleRequest, from_flavor: tuple[RequestGroup, ...]) -> list[RequestGroup]:
    explicit = [
        RequestGroup(
            suffix=group.suffix,
            resources=dict(group.resources),
            required=frozenset(group.required_traits),
            forbidden=frozenset(group.forbidden_traits),
            member_of=tuple(tuple(str(a) for a in any_of) for any_of in group.member_of),
            in_tree=str(group.in_tree) if group.in_tree else None,
        )
        for group in spec.granular_groups
    ]
    groups = [*from_flavor, *explicit]
    seen: set[str] = set()
    for group in groups:
        if group.suffix in seen:
            raise ValueError(f"request group suffix {group.suffix!r} is given twice")
        seen.add(group.suffix)
        _reject_contradiction(group.suffix, group.required, group.forbidden)
    return groups


def _reject_contradiction(
    suffix: str, required: set[str] | frozenset[str], forbidden: set[str] | frozenset[str]
) -> None:
    both = sorted(set(required) & set(forbidden))
    if both:
        where = f"group {suffix!r}" if suffix else "the request"
        raise ValueError(f"traits {', '.join(both)} are both required and forbidden in {where}")
