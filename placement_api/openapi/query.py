"""Query parameters in ``openapi.yaml``, derived from the query models.

The routes parse their query strings by hand (Placement's mini-languages,
its error messages), so FastAPI does not see them. Each operation's
``VersionedShape`` of query models is the single source of which parameters
exist from which microversion and of their JSON Schema; this module adds a
sentence per parameter and the version range in which it is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from placement_api.microversion import FEATURES, MAX_VERSION, MIN_VERSION, Version
from placement_api.web.schemas import (
    allocation_candidates,
    capacity,
    changes,
    heartbeats,
    resource_providers,
    traits,
    usages,
)
from placement_api.web.schemas.common import VersionedShape

# A suffixed request group key in a model's patternProperties: ^resources(...)?$
_GROUP_KEY = re.compile(r"^\^([a-z_]+)\(")

_TRAITS = (
    "Traits, comma-separated: every one is required; from 1.22 `!TRAIT` forbids one; "
    "from 1.39 `in:A,B` requires any of them and a repeated key adds a further condition "
    "(before 1.39 only the last one counts)."
)
_MEMBER_OF = (
    "An aggregate uuid, or `in:uuid1,uuid2` (member of any of them); from 1.24 a repeated "
    "key adds a further condition; from 1.32 `!uuid` or `!in:uuid1,uuid2` forbids."
)
_RESOURCES = "Amounts the provider (or group) must have room for: `VCPU:2,MEMORY_MB:4096`."

DESCRIPTIONS: dict[str, dict[str, str]] = {
    "listResourceProviders": {
        "name": "Exact provider name.",
        "uuid": "Exact provider uuid.",
        "member_of": _MEMBER_OF,
        "resources": _RESOURCES + " Providers with enough free capacity of each class.",
        "in_tree": "A provider uuid: only providers of its tree.",
        "required": _TRAITS,
    },
    "listAllocationCandidates": {
        "resources": _RESOURCES + " From 1.25 `resourcesN` (a "
        "numbered request group), from 1.33 `resources_NAME` too, each met by one provider.",
        "limit": "Most allocation requests returned (a positive integer).",
        "required": _TRAITS + " May carry a group suffix like `resources`.",
        "member_of": _MEMBER_OF + " May carry a group suffix like `resources`.",
        "group_policy": "`none` (groups may share a provider) or `isolate` (they may not); "
        "required when two or more suffixed groups are given.",
        "in_tree": "A provider uuid: only its tree serves the group. May carry a group suffix.",
        "root_required": "Traits the root provider of each candidate's tree must have "
        "(`!TRAIT` forbids).",
        "same_subtree": "Group suffixes, comma-separated, whose providers must share one "
        "subtree; may be given more than once; a suffixed group without resources needs one.",
    },
    "showTotalUsages": {
        "project_id": "The project whose usage is totalled (required).",
        "user_id": "Only the allocations of this user in the project.",
        "consumer_type": "One consumer type's totals, `all` (one group for everything) or "
        "`unknown` (consumers without a type).",
    },
    "listChanges": {
        "since": "Return the changes after this index. Absent: no changes, only the feed's "
        "latest index (the place to start following from).",
        "limit": f"Most changes returned, 1 to {changes.MAX_LIMIT}; default "
        f"{changes.DEFAULT_LIMIT}.",
        "wait": f"Seconds (0 to {changes.MAX_WAIT}) to wait for a change when there is none "
        "after `since`; the server waits at most its `changes_max_wait` setting. Default 0: "
        "answer now.",
    },
    "showCapacity": {
        "resources": _RESOURCES + " The flavor whose instances are counted; absent: usage "
        "figures only.",
        "required": _TRAITS + " Always in 1.39's syntax.",
        "member_of": _MEMBER_OF + " Always in 1.39's syntax.",
        "by": "Breakdowns to include, comma-separated: `host`, `aggregate`, `az`; default all "
        "the caller may see (`host` needs policy `placement:capacity:hosts:read`).",
        "include_unavailable": "`true`: count hosts that are disabled (COMPUTE_STATUS_DISABLED) "
        "or down (heartbeats missed) too; default `false`: leave them out, counted apart "
        "in `unavailable`.",
    },
    "listHeartbeats": {
        "alive": "`true`: only hosts alive at `now`; `false`: only hosts down.",
        "in_tree": "A provider uuid: only the heartbeat of its tree's root.",
    },
    "listTraits": {
        "name": "`in:A,B` (exactly these names) or `startswith:PREFIX`.",
        "associated": "`true`: only traits some provider has; `false`: only traits none has.",
    },
}


# Value schemas stricter than the query model's plain string (documentation only:
# the routes parse these values themselves, case-blind for ``associated``).
_UUID = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
_MEMBER_OF_VALUE = {"type": "string", "pattern": f"^!?(in:{_UUID}(,{_UUID})*|{_UUID})$"}
_AMOUNT = "[A-Z0-9_]+:[1-9][0-9]*"
_AMOUNTS = {"type": "string", "pattern": f"^{_AMOUNT}(,{_AMOUNT})*$"}
VALUE_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("listTraits", "associated"): {
        "type": "string",
        "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$",
    },
    ("listTraits", "name"): {"type": "string", "pattern": ":"},
    ("listResourceProviders", "member_of"): _MEMBER_OF_VALUE,
    ("listAllocationCandidates", "member_of"): _MEMBER_OF_VALUE,
    ("listResourceProviders", "resources"): _AMOUNTS,
    ("listAllocationCandidates", "resources"): _AMOUNTS,
    ("showCapacity", "member_of"): _MEMBER_OF_VALUE,
    ("showCapacity", "resources"): _AMOUNTS,
}


@dataclass(frozen=True)
class QueryDoc:
    shape: VersionedShape[Any]
    since: Version


def _plain(model: type[BaseModel]) -> QueryDoc:
    return QueryDoc(VersionedShape(model), MIN_VERSION)


QUERIES: dict[str, QueryDoc] = {
    "listResourceProviders": QueryDoc(resource_providers.list_query_schema, MIN_VERSION),
    "listAllocationCandidates": QueryDoc(
        allocation_candidates.query_schema, FEATURES["allocation_candidates"]
    ),
    "showTotalUsages": QueryDoc(
        VersionedShape(usages.UsagesQuery, (("consumer_types", usages.UsagesQuery1_38),)),
        FEATURES["usages_by_project"],
    ),
    "listTraits": QueryDoc(VersionedShape(traits.TraitListQuery), FEATURES["traits"]),
    "listChanges": _plain(changes.ChangesQuery),
    "showCapacity": _plain(capacity.CapacityQuery),
    "listHeartbeats": _plain(heartbeats.HeartbeatsQuery),
}


def _models_by_version(doc: QueryDoc) -> list[tuple[Version, type[BaseModel]]]:
    newer = [(FEATURES[feature], model) for feature, model in doc.shape.newer]
    return [(doc.since, doc.shape.oldest), *sorted(newer, key=lambda item: item[0])]


def _parameters_of(model: type[BaseModel]) -> dict[str, tuple[dict[str, Any], bool]]:
    """name -> (value schema, required) of one query model, group keys included."""
    schema = model.model_json_schema(mode="validation")
    required = set(schema.get("required", []))
    found: dict[str, tuple[dict[str, Any], bool]] = {}
    for name, value in schema.get("properties", {}).items():
        value = {k: v for k, v in value.items() if k not in ("title", "description", "default")}
        found[name] = (_without_null(value), name in required)
    for key in schema.get("patternProperties", {}):
        match = _GROUP_KEY.match(key)
        if match and match.group(1) not in found:
            found[match.group(1)] = ({"type": "string"}, False)
    return found


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    options = [option for option in schema.get("anyOf", []) if option.get("type") != "null"]
    return options[0] if len(options) == 1 else schema


def _range_text(versions: list[Version], required_in: list[Version], since: Version) -> str:
    first, last = versions[0], versions[-1]
    notes = []
    if first != since:
        notes.append(f"From {first}")
    if last != MAX_VERSION:
        notes.append(f"Until {last}")
    if required_in and len(required_in) < len(versions):
        notes.append(f"Required from {required_in[0]} to {required_in[-1]}")
    return ". ".join(notes) + "." if notes else ""


def query_parameters(operation_id: str) -> list[dict[str, Any]]:
    """The documented query parameters of one operation (none when it takes none)."""
    doc = QUERIES.get(operation_id)
    if doc is None:
        return []
    descriptions = DESCRIPTIONS[operation_id]
    steps = _models_by_version(doc)
    # The last version each step covers: up to the next step's first version.
    ends = [Version(v.major, v.minor - 1) for v, _ in steps[1:]] + [MAX_VERSION]
    seen: dict[str, dict[str, Any]] = {}
    for (start, model), end in zip(steps, ends, strict=True):
        for name, (schema, required) in _parameters_of(model).items():
            entry = seen.setdefault(name, {"schema": schema, "versions": [], "required": []})
            entry["schema"] = schema
            entry["versions"] += [start, end]
            if required:
                entry["required"] += [start, end]
    parameters = []
    for name, entry in seen.items():
        if name not in descriptions:
            raise KeyError(f"{operation_id}: query parameter {name!r} has no description")
        note = _range_text(entry["versions"], entry["required"], doc.since)
        always_required = entry["required"] == entry["versions"] and entry["versions"][-1] == (
            MAX_VERSION
        )
        parameters.append(
            {
                "name": name,
                "in": "query",
                "required": always_required,
                "description": f"{descriptions[name]} {note}".strip(),
                "schema": VALUE_SCHEMAS.get((operation_id, name), entry["schema"]),
            }
        )
    return parameters
