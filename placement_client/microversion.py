"""Microversion negotiation from Placement's root version document (``GET /``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

SERVICE = "placement"


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Self:
        major, _, minor = text.strip().removeprefix("v").partition(".")
        try:
            return cls(int(major), int(minor))
        except ValueError:
            raise ValueError(f"not a microversion: {text!r}") from None

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def header(self) -> str:
        """The value of ``OpenStack-API-Version`` that asks for this version."""
        return f"{SERVICE} {self}"


@dataclass(frozen=True)
class ServerVersions:
    minimum: Version
    maximum: Version

    @classmethod
    def from_root_document(cls, document: Any) -> Self:
        """Placement answers ``{"versions": [{"min_version": "1.0", "max_version": ...}]}``."""
        try:
            entry = document["versions"][0]
            return cls(Version.parse(entry["min_version"]), Version.parse(entry["max_version"]))
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ValueError(f"not a Placement version document: {document!r:.300}") from error


def negotiate(wanted: Version, needed: Version, server: ServerVersions) -> Version | None:
    """The newest version both sides speak, up to ``wanted`` and at least ``needed``;
    None when there is none."""
    chosen = min(wanted, server.maximum)
    if chosen < needed or chosen < server.minimum:
        return None
    return chosen
