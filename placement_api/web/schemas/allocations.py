"""Allocation request and response models, one request shape per microversion range.

The JSON Schema of each request model is what clients see in "JSON does not
validate" errors, so object shapes keyed by UUID or resource class are spelled
with ``patternProperties`` the way Placement spells them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, RootModel, WithJsonSchema

from placement_api.web.schemas.common import (
    GENERATION_RANGE,
    MAX_BIGINT,
    MAX_INT,
    NAMED_SUFFIX,
    RESOURCE_CLASS_PATTERN,
    RequestModel,
    ResponseModel,
    Uuid,
    VersionedShape,
)

# Placement's keys are loose: 36 characters of hex digits and dashes.
UUID_KEY_PATTERN = r"^[0-9a-fA-F-]{36}$"
CONSUMER_TYPE_PATTERN = r"^[A-Z0-9_]+$"
# The keys of ``mappings`` checked, as upstream spells them: unanchored, so
# any key holding a suffix character must map to provider uuids; other keys
# (an empty one) are not checked at all. An empty object is refused.
MAPPED_SUFFIX_PATTERN = NAMED_SUFFIX


def keyed_object(
    pattern: str, value_schema: dict[str, Any], *, min_properties: int
) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "type": "object",
            "minProperties": min_properties,
            "patternProperties": {pattern: value_schema},
            "additionalProperties": False,
        }
    )


Amounts = Annotated[
    dict[str, int],
    keyed_object(
        RESOURCE_CLASS_PATTERN,
        {"type": "integer", "minimum": 1, "maximum": MAX_BIGINT},
        min_properties=1,
    ),
]
ExternalId = Annotated[str, Field(min_length=1, max_length=255)]
ConsumerGeneration = Annotated[
    int | None, WithJsonSchema({"type": ["integer", "null"], **GENERATION_RANGE})
]
ConsumerType = Annotated[str, Field(pattern=CONSUMER_TYPE_PATTERN, min_length=1, max_length=255)]
Mappings = Annotated[
    dict[str, Any] | None,
    WithJsonSchema(
        {
            "type": "object",
            "minProperties": 1,
            "patternProperties": {
                MAPPED_SUFFIX_PATTERN: {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "format": "uuid"},
                }
            },
        }
    ),
]


class ProviderRef(RequestModel):
    uuid: Uuid


class ListedAllocation(RequestModel):
    """One entry of the list format (before 1.12)."""

    resource_provider: ProviderRef
    resources: Amounts


class ProviderAllocation(RequestModel):
    """The amounts a consumer takes from one provider (dict format, 1.12+)."""

    # Echoed back from GET and ignored on write.
    generation: Annotated[int | None, WithJsonSchema({"type": "integer"})] = None
    resources: Amounts


def _by_provider(min_properties: int) -> WithJsonSchema:
    return keyed_object(
        UUID_KEY_PATTERN, ProviderAllocation.model_json_schema(), min_properties=min_properties
    )


ByProvider = Annotated[dict[str, ProviderAllocation], _by_provider(1)]
ByProviderOrEmpty = Annotated[dict[str, ProviderAllocation], _by_provider(0)]


class AllocationsPut(RequestModel):
    """PUT /allocations/{consumer_uuid} from 1.0: a list, no owner."""

    allocations: Annotated[list[ListedAllocation], Field(min_length=1)]


class AllocationsPut1_8(AllocationsPut):
    """From 1.8 the owning project and user are required."""

    project_id: ExternalId
    user_id: ExternalId


class AllocationsPut1_12(RequestModel):
    """From 1.12 allocations are keyed by provider, like GET's answer."""

    allocations: ByProvider
    project_id: ExternalId
    user_id: ExternalId


class ConsumerAllocations1_13(RequestModel):
    """One consumer in POST /allocations (1.13): empty allocations clear it."""

    allocations: ByProviderOrEmpty
    project_id: ExternalId
    user_id: ExternalId


class ServerGroupRef(RequestModel):
    """An extension of this service (docs/server-groups.md): the write keeps the
    rule of this server group, checked in its own transaction; the consumer
    becomes a member. The group is created by the first claim naming it."""

    uuid: Uuid
    policy: Literal["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"]
    max_server_per_host: Annotated[int, Field(ge=1, le=MAX_INT)] = 1


class ConsumerAllocations1_28(ConsumerAllocations1_13):
    """From 1.28 the consumer generation is required (null for a new consumer).
    ``server_group`` is this service's extension (any microversion from 1.28)."""

    consumer_generation: ConsumerGeneration
    # Inlined: consumers' schemas are nested in keyed objects, where a $ref cannot resolve.
    server_group: Annotated[
        ServerGroupRef | None,
        WithJsonSchema({"anyOf": [ServerGroupRef.model_json_schema(), {"type": "null"}]}),
    ] = None


class ConsumerAllocations1_34(ConsumerAllocations1_28):
    """From 1.34 the request-group mappings of a candidate may be sent along (ignored)."""

    mappings: Mappings = None


class ConsumerAllocations1_38(ConsumerAllocations1_34):
    """From 1.38 the consumer type is required."""

    consumer_type: ConsumerType


# PUT shares the consumer shapes from 1.28: empty allocations there mean "delete".
AllocationsPut1_28 = ConsumerAllocations1_28
AllocationsPut1_34 = ConsumerAllocations1_34
AllocationsPut1_38 = ConsumerAllocations1_38

# Every request shape of one consumer's allocations (the 1.8 and 1.28+
# shapes are subclasses of these).
PutShape = AllocationsPut | AllocationsPut1_12 | ConsumerAllocations1_13


put_schema = VersionedShape[type[PutShape]](
    AllocationsPut,
    (
        ("consumer_types", AllocationsPut1_38),
        ("candidates_mappings", AllocationsPut1_34),
        ("consumer_generation", AllocationsPut1_28),
        ("allocations_dict_format", AllocationsPut1_12),
        ("allocations_require_project_user", AllocationsPut1_8),
    ),
)


def _by_consumer(model: type[ConsumerAllocations1_13], min_properties: int) -> WithJsonSchema:
    return keyed_object(UUID_KEY_PATTERN, model.model_json_schema(), min_properties=min_properties)


class AllocationsPost(RootModel[dict[str, ConsumerAllocations1_13]]):
    """POST /allocations (1.13): the new allocations of several consumers, by consumer."""

    root: Annotated[dict[str, ConsumerAllocations1_13], _by_consumer(ConsumerAllocations1_13, 1)]


class AllocationsPost1_28(RootModel[dict[str, ConsumerAllocations1_28]]):
    root: Annotated[dict[str, ConsumerAllocations1_28], _by_consumer(ConsumerAllocations1_28, 1)]


class AllocationsPost1_34(RootModel[dict[str, ConsumerAllocations1_34]]):
    root: Annotated[dict[str, ConsumerAllocations1_34], _by_consumer(ConsumerAllocations1_34, 1)]


class AllocationsPost1_38(RootModel[dict[str, ConsumerAllocations1_38]]):
    root: Annotated[dict[str, ConsumerAllocations1_38], _by_consumer(ConsumerAllocations1_38, 1)]


PostShape = AllocationsPost | AllocationsPost1_28 | AllocationsPost1_34 | AllocationsPost1_38


post_schema = VersionedShape[type[PostShape]](
    AllocationsPost,
    (
        ("consumer_types", AllocationsPost1_38),
        ("candidates_mappings", AllocationsPost1_34),
        ("consumer_generation", AllocationsPost1_28),
    ),
)


class ProviderShare(ResponseModel):
    generation: int
    resources: dict[str, int]


class ConsumerAllocationsView(ResponseModel):
    """GET /allocations/{consumer_uuid}. ``project_id``/``user_id`` appear from
    1.12, ``consumer_generation`` from 1.28 and ``consumer_type`` from 1.38,
    only when the consumer has allocations."""

    allocations: dict[str, ProviderShare]
    project_id: str | None = None
    user_id: str | None = None
    consumer_generation: int | None = None
    consumer_type: str | None = None


class ConsumerShare(ResponseModel):
    resources: dict[str, int]
    consumer_generation: int | None = Field(default=None, description="From 1.28.")


class ProviderAllocationsView(ResponseModel):
    """GET /resource_providers/{uuid}/allocations, keyed by consumer."""

    resource_provider_generation: int
    allocations: dict[str, ConsumerShare]


class ServerGroupView(ResponseModel):
    """GET /server_groups/{uuid} (an extension): the group's rule and its members,
    each with the hosts (root provider uuids) it holds allocations on."""

    uuid: str
    policy: str
    max_server_per_host: int
    members: dict[str, list[str]]


class ServerGroupsQuery(RequestModel):
    """GET /server_groups (an extension): the groups ``member`` belongs to."""

    member: Uuid


class ServerGroupsView(ResponseModel):
    server_groups: list[ServerGroupView]
