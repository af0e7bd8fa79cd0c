"""GET /allocation_candidates: query-string models by microversion, response models.

From 1.25 the group keys carry suffixes, so those models accept keys matching
``patternProperties`` (numbered suffixes, or 1.33's named ones) and nothing
else: a stray key is refused with jsonschema's "does not match any of the
regexes" message, as upstream does.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, WithJsonSchema
from pydantic.config import JsonDict

from placement_api.web.schemas.common import (
    LIMIT_PATTERN,
    NAMED_SUFFIX,
    NUMBERED_SUFFIX,
    RequestModel,
    ResponseModel,
    VersionedShape,
)

# A plain string schema (no anyOf-null), so a bad value's message names ``limit``.
OptionalLimit = Annotated[
    str | None, WithJsonSchema({"type": "string", "pattern": LIMIT_PATTERN, "minLength": 1})
]
GroupPolicy = Literal["none", "isolate"]


def _group_keys(suffix: str, prefixes: tuple[str, ...]) -> ConfigDict:
    """Accept the suffixed group keys, and no other extra key."""

    def extend(schema: JsonDict) -> None:
        schema["patternProperties"] = {
            f"^{prefix}({suffix})?$": {"type": "string"} for prefix in prefixes
        }
        schema["additionalProperties"] = False

    return ConfigDict(extra="allow", json_schema_extra=extend)


class CandidatesQuery(RequestModel):
    """1.10: one group, ``resources`` only."""

    resources: str


class CandidatesQuery1_16(CandidatesQuery):
    limit: OptionalLimit = None


class CandidatesQuery1_17(CandidatesQuery1_16):
    required: str | None = None


class CandidatesQuery1_21(CandidatesQuery1_17):
    member_of: str | None = None


class CandidatesQuery1_25(RequestModel):
    """1.25: numbered request groups and ``group_policy``."""

    model_config = _group_keys(NUMBERED_SUFFIX, ("resources", "required", "member_of"))

    limit: OptionalLimit = None
    group_policy: GroupPolicy | None = None


class CandidatesQuery1_31(CandidatesQuery1_25):
    """1.31: ``in_tree`` per group."""

    model_config = _group_keys(NUMBERED_SUFFIX, ("resources", "required", "member_of", "in_tree"))


class CandidatesQuery1_33(CandidatesQuery1_25):
    """1.33: group suffixes may be strings."""

    model_config = _group_keys(NAMED_SUFFIX, ("resources", "required", "member_of", "in_tree"))


class CandidatesQuery1_35(CandidatesQuery1_33):
    root_required: str | None = None


class CandidatesQuery1_36(CandidatesQuery1_35):
    same_subtree: str | None = None


query_schema = VersionedShape[type[RequestModel]](
    CandidatesQuery,
    (
        ("same_subtree", CandidatesQuery1_36),
        ("root_required", CandidatesQuery1_35),
        ("string_group_suffixes", CandidatesQuery1_33),
        ("candidates_in_tree", CandidatesQuery1_31),
        ("granular_groups", CandidatesQuery1_25),
        ("candidates_member_of", CandidatesQuery1_21),
        ("candidates_required", CandidatesQuery1_17),
        ("candidates_limit", CandidatesQuery1_16),
    ),
)


class Resources(ResponseModel):
    resources: dict[str, int]


class ListedProvider(ResponseModel):
    uuid: str


class ListedAllocation(ResponseModel):
    """An allocation before 1.12."""

    resource_provider: ListedProvider
    resources: dict[str, int]


class AllocationRequest(ResponseModel):
    """A body for PUT /allocations/{consumer}: a list before 1.12, keyed by
    provider from 1.12; ``mappings`` (group suffix -> providers) from 1.34."""

    allocations: dict[str, Resources] | list[ListedAllocation]
    mappings: dict[str, list[str]] | None = Field(default=None, description="From 1.34.")


class SummaryResource(ResponseModel):
    capacity: int
    used: int


class ProviderSummary(ResponseModel):
    """Before 1.27 only the requested classes are listed."""

    resources: dict[str, SummaryResource]
    traits: list[str] | None = Field(default=None, description="From 1.17.")
    parent_provider_uuid: str | None = Field(default=None, description="From 1.29.")
    root_provider_uuid: str | None = Field(default=None, description="From 1.29.")


class AllocationCandidates(ResponseModel):
    allocation_requests: list[AllocationRequest]
    provider_summaries: dict[str, ProviderSummary]
