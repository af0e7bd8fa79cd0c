"""Parsers for Placement's query-string mini-languages.

``resources=VCPU:2,MEMORY_MB:512``, ``required=A,!B`` / ``required=in:A,B``
and ``member_of=in:agg1,agg2`` / ``!in:...`` are shared by
``GET /resource_providers`` and ``GET /allocation_candidates``; the parsed
forms are plain data the domain layer turns into SQL.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field

from starlette.datastructures import QueryParams

from placement_api import errors
from placement_api.microversion import Version

_RESOURCES_FORM = (
    "Badly formed resources parameter. Expected resources query string parameter in form: "
    "?resources=VCPU:2,MEMORY_MB:1024. Got: {got}."
)


def single_values(params: QueryParams) -> dict[str, str]:
    """The query as a dict, refusing keys given more than once."""
    result: dict[str, str] = {}
    for key, value in params.multi_items():
        if key in result:
            raise errors.BadRequest(
                f"Query parameter '{key}' may be specified only once.",
                code=errors.QUERY_DUPLICATE_KEY,
            )
        result[key] = value
    return result


def parse_resources(text: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:512`` -> {"VCPU": 2, "MEMORY_MB": 512}."""
    got = text if text else "empty string"
    amounts: dict[str, int] = {}
    for item in text.split(","):
        name, sep, amount_text = item.partition(":")
        name = name.strip()
        if not sep or not name:
            raise errors.BadRequest(_RESOURCES_FORM.format(got=got))
        try:
            amount = int(amount_text)
        except ValueError as exc:
            raise errors.BadRequest(
                f"Requested resource {name} expected positive integer amount. Got: {amount_text}."
            ) from exc
        if amount < 1:
            raise errors.BadRequest(
                f"Requested resource {name} requires amount >= 1. Got: {amount}."
            )
        if name in amounts:
            raise errors.BadRequest(_RESOURCES_FORM.format(got=got))
        amounts[name] = amount
    return amounts


@dataclass
class TraitFilter:
    """Required traits as AND-of-ORs, plus forbidden traits."""

    any_of: list[frozenset[str]] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)

    @property
    def names(self) -> set[str]:
        found = set(self.forbidden)
        for group in self.any_of:
            found |= group
        return found

    def is_empty(self) -> bool:
        return not self.any_of and not self.forbidden


def parse_required(values: list[str], version: Version, *, param: str = "required") -> TraitFilter:
    """Parse one or more ``required`` values (repeats AND together from 1.39)."""
    allow_forbidden = version.has("forbidden_traits")
    form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else "HW_CPU_X86_VMX,CUSTOM_MAGIC"
    result = TraitFilter()
    for value in values:
        if value.startswith("in:"):
            if not version.has("any_traits"):
                raise errors.BadRequest(
                    f"Invalid query string parameters: The format '{value}' only supported "
                    "since microversion 1.39."
                )
            names = [n.strip() for n in value[3:].split(",")]
            if not all(names) or any(n.startswith("!") for n in names):
                raise errors.BadRequest(
                    f"Invalid query string parameters: Expected '{param}' parameter value of "
                    f"the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
                )
            result.any_of.append(frozenset(names))
            continue
        names = [n.strip() for n in value.split(",")]
        bad = not all(names) or any(n.startswith("!") and not allow_forbidden for n in names)
        if bad or any(n == "!" for n in names):
            raise errors.BadRequest(
                f"Invalid query string parameters: Expected '{param}' parameter value of "
                f"the form: {form}. Got: {value}"
            )
        for name in names:
            if name.startswith("!"):
                result.forbidden.add(name[1:])
            else:
                result.any_of.append(frozenset([name]))
    conflicting = {
        n for group in result.any_of if len(group) == 1 for n in group
    } & result.forbidden
    if conflicting:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in the following traits keys: "
            f"{param}: ({', '.join(sorted(conflicting))})"
        )
    return result


@dataclass
class AggregateFilter:
    """member_of: each entry of ``any_of`` is an OR-set; entries AND together."""

    any_of: list[frozenset[str]] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)

    def is_empty(self) -> bool:
        return not self.any_of and not self.forbidden


def is_uuid(text: str) -> bool:
    try:
        uuidlib.UUID(text)
    except ValueError:
        return False
    return True


def parse_member_of(values: list[str], version: Version) -> AggregateFilter:
    result = AggregateFilter()
    if len(values) > 1 and not version.has("member_of_repeated"):
        raise errors.BadRequest("Multiple member_of parameters are not supported")
    for value in values:
        forbidden = value.startswith("!")
        if forbidden:
            if not version.has("forbidden_aggregates"):
                raise errors.BadRequest(
                    "Forbidden member_of parameters are not supported in the specified microversion"
                )
            value = value[1:]
        any_prefix = value.startswith("in:")
        if any_prefix:
            value = value[3:]
        uuids = value.split(",")
        if not all(is_uuid(u) for u in uuids):
            raise errors.BadRequest(
                "Invalid query string parameters: Expected 'member_of' parameter to contain "
                "valid UUID(s)."
            )
        if len(uuids) > 1 and not any_prefix:
            raise errors.BadRequest(
                "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
                "keyword using the valid microversion."
            )
        if forbidden:
            result.forbidden.update(uuids)
        else:
            result.any_of.append(frozenset(uuids))
    return result
