"""Resource provider request and response models, by microversion."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from placement_api.microversion import Version
from placement_api.web.schemas.common import (
    Link,
    NullableUuid,
    ProviderName,
    RequestModel,
    ResponseModel,
    Uuid,
    VersionedShape,
)


class ProviderCreate(RequestModel):
    """POST /resource_providers before 1.14."""

    name: ProviderName
    uuid: Uuid | None = None


class ProviderCreateNested(ProviderCreate):
    """POST /resource_providers from 1.14: may name a parent."""

    parent_provider_uuid: NullableUuid = None


class ProviderUpdate(RequestModel):
    """PUT /resource_providers/{uuid} before 1.14."""

    name: ProviderName


class ProviderUpdateNested(ProviderUpdate):
    """PUT /resource_providers/{uuid} from 1.14."""

    parent_provider_uuid: NullableUuid = None


def create_schema(version: Version) -> type[ProviderCreate]:
    return ProviderCreateNested if version.has("nested_providers") else ProviderCreate


def update_schema(version: Version) -> type[ProviderUpdate]:
    return ProviderUpdateNested if version.has("nested_providers") else ProviderUpdate


class ProviderListQuery(RequestModel):
    """Query of GET /resource_providers at 1.0."""

    name: str | None = None
    uuid: Uuid | None = None


class ProviderListQuery1_3(ProviderListQuery):
    member_of: str | None = None


class ProviderListQuery1_4(ProviderListQuery1_3):
    resources: str | None = None


class ProviderListQuery1_14(ProviderListQuery1_4):
    in_tree: Uuid | None = None


class ProviderListQuery1_18(ProviderListQuery1_14):
    required: str | None = None


list_query_schema = VersionedShape[type[ProviderListQuery]](
    ProviderListQuery,
    (
        ("providers_required", ProviderListQuery1_18),
        ("nested_providers", ProviderListQuery1_14),
        ("resources_query", ProviderListQuery1_4),
        ("member_of_query", ProviderListQuery1_3),
    ),
)


class Provider(ResponseModel):
    """A resource provider. ``parent_provider_uuid`` and ``root_provider_uuid``
    appear from 1.14; the ``aggregates``/``traits``/``allocations`` links from
    1.1/1.6/1.11."""

    uuid: Uuid
    name: str
    generation: int
    parent_provider_uuid: str | None = Field(default=None, description="From 1.14.")
    root_provider_uuid: str | None = Field(default=None, description="From 1.14.")
    links: list[Link]


class ProviderList(ResponseModel):
    resource_providers: list[Provider]


def provider_links(uuid: str, version: Version) -> list[dict[str, Any]]:
    base = f"/resource_providers/{uuid}"
    links = [
        {"rel": "self", "href": base},
        {"rel": "inventories", "href": f"{base}/inventories"},
        {"rel": "usages", "href": f"{base}/usages"},
    ]
    if version.has("aggregates"):
        links.append({"rel": "aggregates", "href": f"{base}/aggregates"})
    if version.has("traits"):
        links.append({"rel": "traits", "href": f"{base}/traits"})
    if version.has("provider_links_allocations"):
        links.append({"rel": "allocations", "href": f"{base}/allocations"})
    return links
