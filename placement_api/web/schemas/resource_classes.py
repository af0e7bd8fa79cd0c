"""Resource class request and response models.

Clients may only create (and, before 1.7, rename to) ``CUSTOM_`` names; the
standard names come from os-resource-classes.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from placement_api.web.schemas.common import (
    CUSTOM_RESOURCE_CLASS_PATTERN,
    Link,
    RequestModel,
    ResponseModel,
)

CustomResourceClassName = Annotated[
    str, Field(pattern=CUSTOM_RESOURCE_CLASS_PATTERN, max_length=255)
]


class ResourceClassCreate(RequestModel):
    """POST /resource_classes; also how PUT from 1.7 validates the name in its path."""

    name: CustomResourceClassName


class ResourceClassRename(RequestModel):
    """PUT /resource_classes/{name} from 1.2 to 1.6: the class's new name."""

    name: CustomResourceClassName


class ResourceClass(ResponseModel):
    name: str
    links: list[Link]


class ResourceClassList(ResponseModel):
    resource_classes: list[ResourceClass]


def resource_class_url(name: str) -> str:
    return f"/resource_classes/{name}"


def render_resource_class(name: str) -> dict[str, Any]:
    return {"name": name, "links": [{"rel": "self", "href": resource_class_url(name)}]}
