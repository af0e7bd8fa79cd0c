"""The version document served at ``/``."""

from __future__ import annotations

from pydantic import BaseModel

from placement_api.microversion import Version
from placement_api.web.schemas.common import Link


class VersionEntry(BaseModel):
    id: str
    status: str
    min_version: str
    max_version: str
    links: list[Link]


class VersionDocument(BaseModel):
    versions: list[VersionEntry]

    @classmethod
    def current(cls, minimum: Version, maximum: Version) -> VersionDocument:
        entry = VersionEntry(
            id="v1.0",
            status="CURRENT",
            min_version=str(minimum),
            max_version=str(maximum),
            links=[Link(rel="self", href="")],
        )
        return cls(versions=[entry])
