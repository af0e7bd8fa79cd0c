"""Parsers for Placement's query-string mini-languages.

``resources=VCPU:2,MEMORY_MB:512``, ``required=A,!B`` / ``required=in:A,B``
and ``member_of=in:agg1,agg2`` / ``!in:...`` are shared by
``GET /resource_providers`` and ``GET /allocation_candidates``; the parsed
forms are plain data the domain layer turns into SQL.
"""

from __future__ import annotations

from placement_api import errors
from placement_api.domain.filters import AggregateFilter, TraitFilter
from placement_api.errors import shortened
from placement_api.microversion import Version
from placement_api.web.schemas.common import MAX_INT, is_uuid

_RESOURCES_FORM = (
    "Badly formed resources parameter. Expected resources query string parameter in form: "
    "?resources=VCPU:2,MEMORY_MB:1024. Got: {got}."
)


def parse_resources(text: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:512`` -> {"VCPU": 2, "MEMORY_MB": 512}."""
    got = text if text else "empty string"
    amounts: dict[str, int] = {}
    for item in text.split(","):
        name, sep, amount_text = item.partition(":")
        name = name.strip()
        if not sep or not name:
            # Upstream names the malformed item ("Got: ." for a trailing comma).
            raise errors.BadRequest(_RESOURCES_FORM.format(got=item if text else got))
        try:
            amount = int(amount_text)
        except ValueError as exc:
            raise errors.BadRequest(
                f"Requested resource {name} expected positive integer amount. "
                f"Got: {shortened(amount_text)}."
            ) from exc
        if amount < 1:
            raise errors.BadRequest(
                f"Requested resource {name} requires amount >= 1. Got: {amount}."
            )
        if amount > MAX_INT:
            # No inventory's max_unit is larger, and SQL adds amounts to 64-bit usage.
            raise errors.BadRequest(
                f"Requested resource {name} requires amount <= {MAX_INT}. "
                f"Got: {shortened(amount_text)}."
            )
        if name in amounts:
            raise errors.BadRequest(_RESOURCES_FORM.format(got=got))
        amounts[name] = amount
    return amounts


_ANY_TRAITS_FORM = "in:HW_CPU_X86_VMX,CUSTOM_MAGIC"


def _parse_any_traits(value: str, version: Version) -> frozenset[str]:
    """``in:A,B`` (1.39+): one OR-group of required traits."""
    if not version.has("any_traits"):
        raise errors.BadRequest(
            f"Invalid query string parameters: The format '{_ANY_TRAITS_FORM}' only supported "
            f"since microversion 1.39. Got: {value}"
        )
    names = frozenset(name.strip() for name in value[3:].split(","))
    if not all(names):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            f"{_ANY_TRAITS_FORM}. Got an empty trait in: {value}"
        )
    if any(name.startswith("!") for name in names):
        raise errors.BadRequest(
            f"Invalid query string parameters: The format '{_ANY_TRAITS_FORM}' does not "
            f"support forbidden traits. Got: {value}"
        )
    return names


def _parse_all_traits(value: str, version: Version) -> tuple[list[frozenset[str]], set[str]]:
    """``A,!B``: each plain name is required on its own, each ``!name`` forbidden (1.22+)."""
    allow_forbidden = version.has("forbidden_traits")
    names = [name.strip() for name in value.split(",")]
    # As upstream does, any run of leading "!" marks a single forbidden trait.
    forbidden = {name.lstrip("!") for name in names if name.startswith("!")}
    if not all(names) or not all(forbidden):
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else "HW_CPU_X86_VMX,CUSTOM_MAGIC"
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            f"{form}. Got an empty trait in: {value}"
        )
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            f"HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
        )
    required = [frozenset([name]) for name in names if not name.startswith("!")]
    return required, forbidden


def conflicting_traits(traits: TraitFilter, param: str = "required") -> list[str]:
    """``param: (A, B)`` for each OR-group whose every trait is also forbidden."""
    return [
        f"{param}: ({', '.join(sorted(group))})"
        for group in traits.any_of
        if group <= traits.forbidden
    ]


def parse_required(
    values: list[str], version: Version, *, param: str = "required", check_conflicts: bool = True
) -> TraitFilter:
    """Parse the ``required`` values of one request group.

    Before 1.39 only the last of repeated values counts; from 1.39 they AND
    together. ``check_conflicts`` refuses a group that requires a trait it
    also forbids (allocation candidates do; ``GET /resource_providers`` does not).
    """
    if not version.has("any_traits"):
        values = values[-1:]
    result = TraitFilter()
    for value in values:
        if value.startswith("in:"):
            result.any_of.append(_parse_any_traits(value, version))
            continue
        required, forbidden = _parse_all_traits(value, version)
        result.any_of.extend(required)
        result.forbidden |= forbidden
    conflicts = conflicting_traits(result, param) if check_conflicts else []
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in the following traits keys: "
            + ", ".join(sorted(conflicts))
        )
    return result


def _parse_member_of_value(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """One ``member_of`` value -> (any-of aggregates, forbidden aggregates)."""
    if "," in value and not value.startswith(("in:", "!in:")):
        raise errors.BadRequest(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
            f"keyword using the valid microversion. Got: {value}"
        )
    forbidden = value.startswith("!")
    body = value[1:] if forbidden else value
    uuids = body[3:].split(",") if body.startswith("in:") else [body]
    invalid = next((u for u in uuids if not is_uuid(u)), None)
    if invalid is not None:
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'member_of' parameter to contain "
            f"valid UUID(s). Got: {invalid}"
        )
    group = frozenset(uuids)
    return (frozenset(), group) if forbidden else (group, frozenset())


def parse_member_of(
    values: list[str], version: Version, *, param: str = "member_of"
) -> AggregateFilter:
    """Parse the ``member_of`` values of one request group (repeats AND from 1.24)."""
    if len(values) > 1 and not version.has("member_of_repeated"):
        raise errors.BadRequest(f"Multiple {param} parameters are not supported")
    result = AggregateFilter()
    for value in values:
        any_of, forbidden = _parse_member_of_value(value)
        if any_of:
            result.any_of.append(any_of)
        if forbidden:
            if not version.has("forbidden_aggregates"):
                raise errors.BadRequest(
                    f"Forbidden {param} parameters are not supported in the specified microversion"
                )
            result.forbidden |= forbidden
    return result
