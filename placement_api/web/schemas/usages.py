"""Usage query and response models."""

from __future__ import annotations

from typing import Annotated

from pydantic import WithJsonSchema

from placement_api.microversion import Version
from placement_api.web.schemas.allocations import CONSUMER_TYPE_PATTERN, ExternalId
from placement_api.web.schemas.common import RequestModel, ResponseModel

# A consumer type name, or one of the two lower-case pseudo types.
CONSUMER_TYPE_QUERY_PATTERN = CONSUMER_TYPE_PATTERN + r"|^all|^unknown$"


def _optional_string(**constraints: object) -> WithJsonSchema:
    # A plain string schema (no anyOf-null), so a bad value's message names the constraint.
    return WithJsonSchema({"type": "string", **constraints})


OptionalExternalId = Annotated[str | None, _optional_string(minLength=1, maxLength=255)]
ConsumerTypeFilter = Annotated[
    str | None,
    _optional_string(pattern=CONSUMER_TYPE_QUERY_PATTERN, minLength=1, maxLength=255),
]


class UsagesQuery(RequestModel):
    """GET /usages (1.9+): the totals of a project, optionally of one of its users."""

    project_id: ExternalId
    user_id: OptionalExternalId = None


class UsagesQuery1_38(UsagesQuery):
    """From 1.38 totals are grouped by consumer type; ``consumer_type`` picks one
    type, ``all`` (one group for everything) or ``unknown`` (consumers without a type)."""

    consumer_type: ConsumerTypeFilter = None


def usages_query_schema(version: Version) -> type[UsagesQuery]:
    return UsagesQuery1_38 if version.has("consumer_types") else UsagesQuery


class ProviderUsages(ResponseModel):
    """GET /resource_providers/{uuid}/usages: amount used per class of its inventory."""

    resource_provider_generation: int
    usages: dict[str, int]


class TotalUsages(ResponseModel):
    """GET /usages: amount used per class; from 1.38 per consumer type, each group
    with a ``consumer_count``."""

    usages: dict[str, int] | dict[str, dict[str, int]]
