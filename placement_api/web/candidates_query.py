"""The query string of GET /allocation_candidates, parsed into a
``CandidateRequest``.

Keys ``resources``, ``required``, ``member_of`` and ``in_tree`` form request
groups by suffix: none (the unsuffixed group, whose resources may come from
several providers of one tree or sharing providers), a number (1.25) or, from
1.33, a string. Suffixed groups are "granular": each is met by one provider.
The request-wide keys are ``limit``, ``group_policy``, ``root_required`` and
``same_subtree``. Checks and their order follow upstream Placement, so the
same mistakes give the same errors.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from placement_api import errors
from placement_api.domain.candidates.request import CandidateRequest, RequestGroup
from placement_api.domain.filters import AggregateFilter, TraitFilter
from placement_api.errors import shortened
from placement_api.microversion import Version
from placement_api.web.querystring import (
    parse_member_of,
    parse_required,
    parse_resources,
)
from placement_api.web.schemas.common import LIMIT_PATTERN, NAMED_SUFFIX, NUMBERED_SUFFIX, is_uuid

GROUP_PREFIXES = ("resources", "required", "member_of", "in_tree")

# root_required keeps the trait syntax ``required`` had before any-traits
# (1.39): plain and ``!`` names, no ``in:``.
_ROOT_REQUIRED_SYNTAX = Version(1, 38)
QUERY_VALUE_RULES = {
    "limit": re.compile(LIMIT_PATTERN),
    "group_policy": re.compile("none|isolate"),
}
QueryItems = Sequence[tuple[str, str]]


def group_key_pattern(version: Version) -> re.Pattern[str]:
    suffix = NAMED_SUFFIX if version.has("string_group_suffixes") else NUMBERED_SUFFIX
    return re.compile(rf"^({'|'.join(GROUP_PREFIXES)})({suffix})?$")


def parse_request(items: QueryItems, version: Version) -> CandidateRequest:
    """Parse a query string already checked against the version's schema."""
    limit, group_policy = _first_int(items, "limit"), _first(items, "group_policy")
    root_required, root_forbidden = _root_required(items)
    same_subtrees = _same_subtrees(items)
    groups = _parse_groups(items, version)
    if version.has("same_subtree"):
        _check_resourceless_groups(groups, same_subtrees)
    else:
        _check_orphans(groups)
    if group_policy is None and sum(group.granular for group in groups) > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more than one '
            '"resources{N}" parameter.'
        )
    return CandidateRequest(
        groups=tuple(groups),
        limit=limit,
        group_policy=group_policy,
        root_required=root_required,
        root_forbidden=root_forbidden,
        same_subtrees=tuple(same_subtrees),
        nested_aware=version.has("candidates_nested"),
    )


def _values(items: QueryItems, key: str) -> list[str]:
    return [value for name, value in items if name == key]


def _first(items: QueryItems, key: str) -> str | None:
    """Upstream reads the first of repeated ``limit``/``group_policy`` keys.

    The query schema has seen only the last of them, so the first is
    checked here against the same rule."""
    values = _values(items, key)
    if not values:
        return None
    if not QUERY_VALUE_RULES[key].fullmatch(values[0]):
        raise errors.BadRequest(
            f"Invalid query string parameters: '{shortened(values[0])}' is not a valid {key}."
        )
    return values[0]


def _first_int(items: QueryItems, key: str) -> int | None:
    value = _first(items, key)
    return int(value) if value is not None else None


def _root_required(items: QueryItems) -> tuple[frozenset[str], frozenset[str]]:
    values = _values(items, "root_required")
    if not values:
        return frozenset(), frozenset()
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'root_required' may be specified only once.",
            code=errors.QUERY_DUPLICATE_KEY,
        )
    traits = parse_required(
        values, _ROOT_REQUIRED_SYNTAX, param="root_required", check_conflicts=False
    )
    required = frozenset(name for group in traits.any_of for name in group)
    conflicts = sorted(required & traits.forbidden)
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in root_required: "
            + ", ".join(conflicts),
            code=errors.QUERY_BAD_VALUE,
        )
    return required, frozenset(traits.forbidden)


def _same_subtrees(items: QueryItems) -> list[frozenset[str]]:
    result = []
    for value in _values(items, "same_subtree"):
        suffixes = frozenset(part.strip() for part in value.split(","))
        if "" in suffixes:
            raise errors.BadRequest(
                "Empty string (unsuffixed group) can not be specified in `same_subtree` ",
                code=errors.QUERY_BAD_VALUE,
            )
        result.append(suffixes)
    return result


def _parse_in_tree(value: str) -> str:
    text = value.strip()
    if not is_uuid(text):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter to be a format "
            f"of uuid. Got: {value}"
        )
    return str(uuidlib.UUID(text))


@dataclass
class _GroupParts:
    resources: dict[str, int] = field(default_factory=dict)
    required: TraitFilter | None = None
    member_of: AggregateFilter | None = None
    in_tree: str | None = None

    def build(self, suffix: str) -> RequestGroup:
        return RequestGroup(
            suffix=suffix,
            resources=self.resources,
            required=self.required or TraitFilter(),
            member_of=self.member_of or AggregateFilter(),
            in_tree=self.in_tree,
        )


def _parse_groups(items: QueryItems, version: Version) -> list[RequestGroup]:
    """Groups in order of first appearance; every value is validated in order."""
    pattern = group_key_pattern(version)
    parts: dict[str, _GroupParts] = {}
    for key, value in items:
        match = pattern.match(key)
        if match is None:
            continue
        prefix, suffix = match.group(1), match.group(2) or ""
        group = parts.setdefault(suffix, _GroupParts())
        if prefix == "resources":
            group.resources = parse_resources(value)
        elif prefix == "in_tree":
            group.in_tree = _parse_in_tree(value)
        # Repeated required/member_of keys combine, so they are read all at once.
        elif prefix == "required" and group.required is None:
            group.required = parse_required(_values(items, key), version, param=key)
        elif prefix == "member_of" and group.member_of is None:
            group.member_of = parse_member_of(_values(items, key), version, param=key)
    return [group.build(suffix) for suffix, group in parts.items()]


def _check_orphans(groups: list[RequestGroup]) -> None:
    """Before 1.36 every group needs resources."""
    orphans = [f"required{g.suffix}" for g in groups if g.required.any_of and not g.resources]
    if orphans:
        raise errors.BadRequest(
            "All traits parameters must be associated with resources.  Found the following "
            f"orphaned traits keys: {', '.join(orphans)}"
        )
    orphans = [
        f"member_of{g.suffix}" for g in groups if not g.member_of.is_empty() and not g.resources
    ]
    if orphans:
        raise errors.BadRequest(
            "All member_of parameters must be associated with resources. Found the following "
            f"orphaned member_of keys: {', '.join(orphans)}"
        )
    if not all(group.resources for group in groups):
        raise errors.BadRequest("All request groups must specify resources.")
    if not groups:
        raise errors.BadRequest(
            "At least one request group (`resources` or `resources{$S}`) is required."
        )


def _check_resourceless_groups(
    groups: list[RequestGroup], same_subtrees: list[frozenset[str]]
) -> None:
    """From 1.36 a suffixed group may lack resources if it is in a ``same_subtree``."""
    resourceless = [group.suffix for group in groups if not group.resources]
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            "There must be at least one resources or resources[$S] parameter.",
            code=errors.QUERY_MISSING_VALUE,
        )
    in_subtrees = set().union(*same_subtrees)
    bad = [suffix for suffix in resourceless if suffix not in in_subtrees]
    if bad:
        raise errors.BadRequest(
            "Resourceless suffixed group request should be specified in `same_subtree` "
            f"query param: bad group(s) - {bad}.",
            code=errors.QUERY_BAD_VALUE,
        )
    known = [group.suffix for group in groups]
    unknown = [s for subtree in same_subtrees for s in sorted(subtree) if s not in known]
    if unknown:
        raise errors.BadRequest(
            f"Real suffixes should be specified in `same_subtree`: {unknown} not found in {known}.",
            code=errors.QUERY_BAD_VALUE,
        )
