"""The compiled schema check in front of jsonschema: it never decides alone."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from placement_api import errors
from placement_api.web.schemas import allocations
from placement_api.web.schemas.validation import _compiled, load_body

PROVIDER = "7c8b8e4c-7d61-4f5a-9b59-6c1d2f0e8a11"


def claim(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "allocations": {PROVIDER: {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    return body | changes


def test_the_allocation_schemas_are_compiled() -> None:
    assert _compiled(allocations.AllocationsPut1_38) is not None
    assert _compiled(allocations.AllocationsPost1_38) is not None


def test_a_schema_with_a_keyword_the_compiler_lacks_is_left_to_jsonschema() -> None:
    class Pair(BaseModel):
        pair: tuple[int, str]  # JSON Schema 2020-12 "prefixItems"

    assert _compiled(Pair) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (claim(allocations={"not-a-uuid": {"resources": {"VCPU": 1}}}), "does not match any"),
        (claim(allocations={PROVIDER: {"resources": {"VCPU": 0}}}), "less than the minimum"),
        (claim(allocations={PROVIDER: {"resources": {"vcpu": 1}}}), "does not match any"),
        (claim(consumer_type="lower"), "does not match"),
        (claim(project_id=""), "should be non-empty"),
        (claim(extra=1), "Additional properties are not allowed"),
    ],
)
def test_a_refused_body_gets_jsonschemas_message(body: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.BadRequest, match=message):
        load_body(allocations.AllocationsPut1_38, body)


def test_what_only_jsonschema_accepts_is_still_accepted() -> None:
    # The compiled check refuses 1.0 as an integer; jsonschema, which decides, accepts it.
    body = claim(allocations={PROVIDER: {"resources": {"VCPU": 1.0}}})
    assert load_body(allocations.AllocationsPut1_38, body).allocations[PROVIDER].resources == {
        "VCPU": 1
    }
