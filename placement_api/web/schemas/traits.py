"""Trait request and response models, and the ``GET /traits`` query language."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from placement_api import errors
from placement_api.web.schemas.common import Generation, RequestModel, ResponseModel

MAX_TRAIT_LENGTH = 255
_CUSTOM_TRAIT_RE = re.compile(r"CUSTOM_[A-Z0-9_]+")

TraitName = Annotated[str, Field(min_length=1, max_length=MAX_TRAIT_LENGTH)]


class TraitListQuery(RequestModel):
    """Query of ``GET /traits``."""

    name: str | None = Field(default=None, description="in:A,B or startswith:PREFIX")
    associated: str | None = Field(default=None, description="true or false")


class ProviderTraitsUpdate(RequestModel):
    """``PUT /resource_providers/{uuid}/traits``: the whole new trait set."""

    traits: list[TraitName]
    resource_provider_generation: Generation


class TraitList(ResponseModel):
    traits: list[str]


class ProviderTraits(ResponseModel):
    traits: list[str]
    resource_provider_generation: int


@dataclass(frozen=True)
class NameFilter:
    """``name=in:A,B`` (exact names) or ``name=startswith:P``; neither field = no filter."""

    names: list[str] | None = None
    prefix: str | None = None


def parse_name_filter(text: str) -> NameFilter:
    operator, sep, value = text.partition(":")
    if not sep:
        raise errors.BadRequest(
            "Badly formatted name parameter. Expected name query string parameter in form: "
            f'?name=[in|startswith]:[name1,name2|prefix]. Got: "{text}"'
        )
    if operator == "in":
        return NameFilter(names=value.split(","))
    if operator == "startswith":
        return NameFilter(prefix=value)
    # Upstream ignores an operator it does not know rather than refusing it.
    return NameFilter()


def parse_associated(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise errors.BadRequest('The query parameter "associated" only accepts "true" or "false"')
    return lowered == "true"


def check_custom_trait_name(name: str) -> None:
    if len(name) > MAX_TRAIT_LENGTH or not _CUSTOM_TRAIT_RE.fullmatch(name):
        raise errors.BadRequest(
            "The trait is invalid. A valid trait must be no longer than 255 characters, start "
            'with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
        )


def trait_url(name: str) -> str:
    return f"/traits/{name}"
