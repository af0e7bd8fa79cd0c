"""Aggregate association request and response models, by microversion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, RootModel, WithJsonSchema

from placement_api.microversion import Version
from placement_api.web.schemas.common import Generation, RequestModel, ResponseModel
from placement_api.web.schemas.validation import load_body

AggregateUuids = Annotated[
    list[str],
    WithJsonSchema(
        {
            "type": "array",
            # Stored as given: the longer spellings of a uuid (braces, "urn:uuid:")
            # would not fit the 36-character column.
            "items": {"type": "string", "format": "uuid", "maxLength": 36},
            "uniqueItems": True,
        }
    ),
]


class AggregateList(RootModel[AggregateUuids]):
    """``PUT /resource_providers/{uuid}/aggregates`` before 1.19: a bare list of UUIDs."""


class AggregatesUpdate(RequestModel):
    """``PUT /resource_providers/{uuid}/aggregates`` from 1.19: guarded by the generation."""

    aggregates: AggregateUuids
    resource_provider_generation: Generation


class ProviderAggregates(ResponseModel):
    aggregates: list[str]
    resource_provider_generation: int | None = Field(default=None, description="From 1.19.")


@dataclass(frozen=True)
class AggregatesChange:
    uuids: list[str]
    # None before 1.19, where the write neither checks nor bumps the generation.
    expected_generation: int | None


def load_update(version: Version, data: Any) -> AggregatesChange:
    if version.has("aggregates_generation"):
        body = load_body(AggregatesUpdate, data)
        return AggregatesChange(body.aggregates, body.resource_provider_generation)
    return AggregatesChange(load_body(AggregateList, data).root, None)
