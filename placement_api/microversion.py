"""Microversion negotiation and the table of what each version changes.

Handlers never compare version numbers. They ask ``version.has(FEATURE)``
for a feature named in ``FEATURES``, so the whole version history of the
API is visible here in one place.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from placement_api import errors
from placement_api.errors import shortened

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"


class Version(NamedTuple):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def has(self, feature: str) -> bool:
        return self >= FEATURES[feature]


MIN_VERSION = Version(1, 0)
MAX_VERSION = Version(1, 39)

# feature name -> first microversion that has it
FEATURES: dict[str, Version] = {
    "aggregates": Version(1, 1),
    "resource_classes": Version(1, 2),
    "member_of_query": Version(1, 3),
    "resources_query": Version(1, 4),
    "inventories_delete_all": Version(1, 5),
    "traits": Version(1, 6),
    "resource_class_put_idempotent": Version(1, 7),
    "allocations_require_project_user": Version(1, 8),
    "usages_by_project": Version(1, 9),
    "allocation_candidates": Version(1, 10),
    "provider_links_allocations": Version(1, 11),
    "allocations_dict_format": Version(1, 12),
    "allocations_post": Version(1, 13),
    "nested_providers": Version(1, 14),
    "last_modified": Version(1, 15),
    "candidates_limit": Version(1, 16),
    "candidates_required": Version(1, 17),
    "providers_required": Version(1, 18),
    "aggregates_generation": Version(1, 19),
    "provider_create_returns_body": Version(1, 20),
    "candidates_member_of": Version(1, 21),
    "forbidden_traits": Version(1, 22),
    "error_codes": Version(1, 23),
    "member_of_repeated": Version(1, 24),
    "granular_groups": Version(1, 25),
    "reserved_equal_total": Version(1, 26),
    "summaries_all_classes": Version(1, 27),
    "consumer_generation": Version(1, 28),
    "candidates_nested": Version(1, 29),
    "reshaper": Version(1, 30),
    "candidates_in_tree": Version(1, 31),
    "forbidden_aggregates": Version(1, 32),
    "string_group_suffixes": Version(1, 33),
    "candidates_mappings": Version(1, 34),
    "root_required": Version(1, 35),
    "same_subtree": Version(1, 36),
    "provider_reparent": Version(1, 37),
    "consumer_types": Version(1, 38),
    "any_traits": Version(1, 39),
}

_VERSION_RE = re.compile(r"^([1-9]\d*|0)\.([1-9]\d*|0)$")
# Every version this service speaks, by its one valid spelling: most requests
# name one, and are spared the pattern and the parse.
_SPOKEN: dict[str, Version] = {
    **{
        str(version): version
        for version in (
            Version(MIN_VERSION.major, minor)
            for minor in range(MIN_VERSION.minor, MAX_VERSION.minor + 1)
        )
    },
    "latest": MAX_VERSION,
}


def parse_version(text: str) -> Version:
    spoken = _SPOKEN.get(text)
    if spoken is not None:
        return spoken
    match = _VERSION_RE.match(text)
    try:
        if match:
            return Version(int(match.group(1)), int(match.group(2)))
    except ValueError:
        pass  # more digits than int() parses: as upstream, not a version string
    raise errors.BadRequest(f"invalid version string: {shortened(text)}")


def requested_text(header_value: str | None) -> str | None:
    """The version text this service was asked for, from a multi-service header."""
    if not header_value:
        return None
    for item in header_value.split(","):
        service, _, version = item.strip().partition(" ")
        if service.lower() == SERVICE_TYPE:
            return version.strip()
    return None


def negotiate(header_value: str | None) -> Version:
    text = requested_text(header_value)
    if text is None:
        return MIN_VERSION
    version = parse_version(text)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise errors.NotAcceptable(
            f"Unacceptable version header: {shortened(text)}",
            extra={"min_version": str(MIN_VERSION), "max_version": str(MAX_VERSION)},
        )
    return version
