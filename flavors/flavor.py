"""A flavor and its extra specs turned into Placement request groups: the flavor's
fields give VCPU, MEMORY_MB and DISK_GB, shaped by the ``hw:`` specs (``hardware``:
PCPU, guest NUMA cells, huge pages), plus ``pci_passthrough:alias`` devices; then
``resources[N]:CLASS``, ``trait[N]:NAME`` and ``group_policy`` adjust. Unscoped and
``aggregate_instance_extra_specs:`` specs are the aggregate filter's; any other spec
is refused (``extra_specs``). docs/extra-specs.md has the table."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from flavors.extra_specs import UnsupportedExtraSpec, check_understood
from flavors.hardware import guest_shape
from flavors.pci_alias import ALIAS_SPEC, PciAlias, alias_groups, parse_alias_request
from flavors.request_group import RequestGroup

_RESOURCE_KEY = re.compile(r"^resources(?P<suffix>[a-zA-Z0-9_-]{1,64})?:(?P<name>[A-Z0-9_]+)$")
_TRAIT_KEY = re.compile(r"^trait(?P<suffix>[a-zA-Z0-9_-]{1,64})?:(?P<name>[A-Z0-9_]+)$")
_GROUP_POLICIES = ("none", "isolate")


class Flavor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    vcpus: int = Field(ge=0)
    memory_mb: int = Field(ge=0)
    root_gb: int = Field(default=0, ge=0)
    ephemeral_gb: int = Field(default=0, ge=0)
    swap: int = Field(default=0, ge=0, description="Swap in MB, as in Nova.")
    extra_specs: dict[str, str] = Field(default_factory=dict)

    @field_validator("extra_specs")
    @classmethod
    def _specs_understood(cls, specs: dict[str, str]) -> dict[str, str]:
        """Everything but the configured PCI aliases, which only the scheduler knows."""
        check_understood(specs)
        _parse_specs(specs)
        if ALIAS_SPEC in specs:
            parse_alias_request(specs[ALIAS_SPEC])
        return specs

    @model_validator(mode="after")
    def _shape_fits(self) -> Self:
        """The hw: specs against the flavor's vCPUs and memory."""
        guest_shape(self.vcpus, self.memory_mb, self.extra_specs, {})
        return self


@dataclass
class _GroupDraft:
    resources: dict[str, int] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class FlavorGroups:
    resources: dict[str, int]
    required: set[str]
    forbidden: set[str]
    granular: tuple[RequestGroup, ...]
    group_policy: str | None
    # Classes the hw: specs asked in their own groups or as PCPU: not to be added again.
    shaped: frozenset[str] = frozenset()


def flavor_groups(
    flavor: Flavor,
    image: Mapping[str, object] | None = None,
    pci_aliases: list[PciAlias] | None = None,
) -> FlavorGroups:
    """``pci_aliases`` None: ``pci_passthrough:alias`` is checked for syntax only and
    asks nothing (the API's capacity report, which has no aliases)."""
    specs = flavor.extra_specs
    drafts, policy = _parse_specs(specs)
    base = drafts.pop("", _GroupDraft())
    shape = guest_shape(flavor.vcpus, flavor.memory_mb, specs, image or {})
    _reject_overlap(base.resources, shape.unnumbered, bool(shape.cells))
    implied = {
        **shape.unnumbered,
        "DISK_GB": flavor.root_gb + flavor.ephemeral_gb + math.ceil(flavor.swap / 1024),
    }
    resources = {name: amount for name, amount in implied.items() if amount > 0}
    resources.update(base.resources)
    devices = []
    if ALIAS_SPEC in specs and pci_aliases is not None:
        devices = alias_groups(specs[ALIAS_SPEC], pci_aliases)
    numbered = [
        RequestGroup(
            suffix=suffix,
            resources={name: n for name, n in draft.resources.items() if n > 0},
            required=frozenset(draft.required),
            forbidden=frozenset(draft.forbidden),
        )
        for suffix, draft in sorted(drafts.items())
    ]
    granular = (*numbered, *shape.cells, *devices)
    if len(shape.cells) > 1:
        if policy == "none":
            raise UnsupportedExtraSpec(
                "group_policy", "none would let two guest NUMA cells share one host cell"
            )
        policy = "isolate"
    return FlavorGroups(
        resources={name: amount for name, amount in resources.items() if amount > 0},
        required=base.required,
        forbidden=base.forbidden,
        granular=granular,
        group_policy=policy,
        shaped=_shaped(shape.unnumbered, bool(shape.cells)),
    )


def _shaped(unnumbered: dict[str, int], cells: bool) -> frozenset[str]:
    if cells:
        return frozenset({"VCPU", "PCPU", "MEMORY_MB"})
    return frozenset({"VCPU", "PCPU"}) if "PCPU" in unnumbered else frozenset()


def _reject_overlap(explicit: dict[str, int], shaped: dict[str, int], cells: bool) -> None:
    """``resources:VCPU`` beside ``hw:cpu_policy`` or guest cells would count twice."""
    if twice := sorted(explicit.keys() & _shaped(shaped, cells)):
        raise UnsupportedExtraSpec(
            f"resources:{twice[0]}", "conflicts with the hw: specs that already ask for it"
        )


def _parse_specs(specs: dict[str, str]) -> tuple[dict[str, _GroupDraft], str | None]:
    drafts: dict[str, _GroupDraft] = {}
    policy: str | None = None
    for key, value in specs.items():
        if key == "group_policy":
            if value not in _GROUP_POLICIES:
                raise ValueError(f"extra spec group_policy must be one of {_GROUP_POLICIES}")
            policy = value
        elif match := _RESOURCE_KEY.match(key):
            draft = drafts.setdefault(match["suffix"] or "", _GroupDraft())
            draft.resources[match["name"]] = _amount(key, value)
        elif match := _TRAIT_KEY.match(key):
            draft = drafts.setdefault(match["suffix"] or "", _GroupDraft())
            if value == "required":
                draft.required.add(match["name"])
            elif value == "forbidden":
                draft.forbidden.add(match["name"])
            else:
                raise ValueError(f"extra spec {key} must be 'required' or 'forbidden'")
    return drafts, policy


def _amount(key: str, value: str) -> int:
    try:
        amount = int(value)
    except ValueError:
        raise ValueError(f"extra spec {key} must be a whole number, not {value!r}") from None
    if amount < 0:
        raise ValueError(f"extra spec {key} must not be negative")
    return amount
