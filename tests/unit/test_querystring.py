"""The query-string mini-languages shared by provider lists and candidates."""

from __future__ import annotations

import pytest

from placement_api import errors
from placement_api.microversion import Version
from placement_api.web.querystring import parse_member_of, parse_required, parse_resources

LATEST = Version(1, 39)
AGG_A = "6f6e3ae4-8b6c-4bc2-9c1b-0e6f5b1b1a01"
AGG_B = "6f6e3ae4-8b6c-4bc2-9c1b-0e6f5b1b1a02"


def test_resources_parse_to_amounts() -> None:
    assert parse_resources("VCPU:2,MEMORY_MB:512") == {"VCPU": 2, "MEMORY_MB": 512}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Got: empty string"),
        ("VCPU", "Badly formed resources parameter"),
        ("VCPU:fred", "expected positive integer amount"),
        ("VCPU:0", "requires amount >= 1"),
        ("VCPU:1,VCPU:2", "Badly formed resources parameter"),
    ],
)
def test_malformed_resources_are_rejected(text: str, message: str) -> None:
    with pytest.raises(errors.BadRequest, match=message):
        parse_resources(text)


def test_required_splits_required_forbidden_and_any_of() -> None:
    parsed = parse_required(["A,!B", "in:C,D"], LATEST)
    assert parsed.any_of == [frozenset({"A"}), frozenset({"C", "D"})]
    assert parsed.forbidden == {"B"}
    assert parsed.names == {"A", "B", "C", "D"}


def test_forbidden_traits_need_1_22_and_any_of_needs_1_39() -> None:
    with pytest.raises(errors.BadRequest):
        parse_required(["!B"], Version(1, 21))
    with pytest.raises(errors.BadRequest, match=r"only supported since microversion 1\.39"):
        parse_required(["in:A,B"], Version(1, 38))


def test_member_of_any_all_and_forbidden() -> None:
    parsed = parse_member_of([f"in:{AGG_A},{AGG_B}", f"!{AGG_B}"], LATEST)
    assert parsed.any_of == [frozenset({AGG_A, AGG_B})]
    assert parsed.forbidden == {AGG_B}


def test_member_of_rules_by_version() -> None:
    with pytest.raises(errors.BadRequest, match="Multiple member_of"):
        parse_member_of([AGG_A, AGG_B], Version(1, 23))
    with pytest.raises(errors.BadRequest, match="Forbidden member_of"):
        parse_member_of([f"!{AGG_A}"], Version(1, 31))
    with pytest.raises(errors.BadRequest, match="valid UUID"):
        parse_member_of(["in:nope"], LATEST)
    with pytest.raises(errors.BadRequest, match="must be prefixed"):
        parse_member_of([f"{AGG_A},{AGG_B}"], LATEST)
