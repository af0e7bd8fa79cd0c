"""Field types shared by request and response models.

Their JSON Schema keywords are the ones Placement clients see in error
messages, so constraints are spelled as plain ``pattern``/``maxLength``/
``minimum`` keywords.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

if TYPE_CHECKING:
    from placement_api.microversion import Version

# Request group suffixes: numbers (1.25), then strings too (1.33).
NUMBERED_SUFFIX = "[1-9][0-9]*"
NAMED_SUFFIX = "[a-zA-Z0-9_-]{1,64}"
# ``limit`` is a positive integer of at most 19 digits (the int64 range's
# length): that is already more candidates than any cloud has.
LIMIT_PATTERN = "^[1-9][0-9]{0,18}$"

ShapeT = TypeVar("ShapeT")

RESOURCE_CLASS_PATTERN = r"^[A-Z0-9_]+$"
CUSTOM_RESOURCE_CLASS_PATTERN = r"^CUSTOM_[A-Z0-9_]+$"
MAX_INT = 2147483647
# Generations are 32-bit columns; amounts are checked against 64-bit ones.
MIN_INT = -2147483648
MAX_BIGINT = 2**63 - 1
GENERATION_RANGE: dict[str, Any] = {"minimum": MIN_INT, "maximum": MAX_INT}

Uuid = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]
NullableUuid = Annotated[
    str | None, WithJsonSchema({"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]})
]
# Upstream's generations are any integer; ours stop at the column's range.
Generation = Annotated[int, Field(ge=MIN_INT, le=MAX_INT)]
ProviderName = Annotated[str, Field(min_length=1, max_length=200)]
ResourceClassName = Annotated[str, Field(pattern=RESOURCE_CLASS_PATTERN, max_length=255)]


class RequestModel(BaseModel):
    """A request body: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


class ResponseModel(BaseModel):
    """A response body, documented in ``openapi.yaml``."""

    model_config = ConfigDict(extra="allow")


class Link(ResponseModel):
    rel: str
    href: str


def pattern_keyed_object(pattern: str, value_schema: dict[str, Any]) -> WithJsonSchema:
    """JSON Schema for an object whose keys must match ``pattern`` (Placement's style)."""
    return WithJsonSchema(
        {
            "type": "object",
            "patternProperties": {pattern: value_schema},
            "additionalProperties": False,
        }
    )


# Request models named in route documentation; openapi.py publishes them
# (and the models they nest) under components/schemas.
DOCUMENTED_REQUEST_MODELS: dict[str, type[BaseModel]] = {}


def request_body(*models: type[BaseModel], description: str = "") -> dict[str, Any]:
    """``openapi_extra`` for a JSON body; several models = one shape per microversion range."""
    for model in models:
        DOCUMENTED_REQUEST_MODELS[model.__name__] = model
    refs = [{"$ref": f"#/components/schemas/{model.__name__}"} for model in models]
    # anyOf, not oneOf: a newer shape usually extends an older one, so one
    # body may match several (a body matching two is no error).
    schema = refs[0] if len(refs) == 1 else {"anyOf": refs}
    body: dict[str, Any] = {
        "required": True,
        "content": {"application/json": {"schema": schema}},
    }
    if description:
        body["description"] = description
    return {"requestBody": body}


@dataclass(frozen=True)
class VersionedShape(Generic[ShapeT]):
    """The request model a microversion takes: the first of ``newer`` (newest
    first) whose feature the version has, else ``oldest``."""

    oldest: ShapeT
    newer: Sequence[tuple[str, ShapeT]] = ()

    def __call__(self, version: Version) -> ShapeT:
        for feature, shape in self.newer:
            if version.has(feature):
                return shape
        return self.oldest


def is_uuid(text: str) -> bool:
    try:
        uuidlib.UUID(text)
    except ValueError:
        return False
    return True
