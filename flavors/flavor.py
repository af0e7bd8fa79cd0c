"""A flavor and its extra specs turned into Placement request groups: the flavor's
fields give VCPU, MEMORY_MB and DISK_GB, which ``resources[N]:CLASS``,
``trait[N]:NAME`` and ``group_policy`` adjust; other extra specs are the filters'
(docs/operations.md, "Flavors file")."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
    def _specs_parse(cls, specs: dict[str, str]) -> dict[str, str]:
        _parse_specs(specs)
        return specs


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


def flavor_groups(flavor: Flavor) -> FlavorGroups:
    drafts, policy = _parse_specs(flavor.extra_specs)
    base = drafts.pop("", _GroupDraft())
    implied = {
        "VCPU": flavor.vcpus,
        "MEMORY_MB": flavor.memory_mb,
        "DISK_GB": flavor.root_gb + flavor.ephemeral_gb + math.ceil(flavor.swap / 1024),
    }
    resources = {name: amount for name, amount in implied.items() if amount > 0}
    resources.update(base.resources)
    granular = tuple(
        RequestGroup(
            suffix=suffix,
            resources={name: n for name, n in draft.resources.items() if n > 0},
            required=frozenset(draft.required),
            forbidden=frozenset(draft.forbidden),
        )
        for suffix, draft in sorted(drafts.items())
    )
    return FlavorGroups(
        resources={name: amount for name, amount in resources.items() if amount > 0},
        required=base.required,
        forbidden=base.forbidden,
        granular=granular,
        group_policy=policy,
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
