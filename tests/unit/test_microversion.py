"""Microversion negotiation."""

from __future__ import annotations

import pytest

from placement_api import errors
from placement_api.microversion import MAX_VERSION, MIN_VERSION, Version, negotiate


def test_absent_header_means_the_minimum() -> None:
    assert negotiate(None) == MIN_VERSION


def test_latest_means_the_maximum() -> None:
    assert negotiate("placement latest") == MAX_VERSION == Version(1, 39)


def test_other_services_in_the_header_are_ignored() -> None:
    assert negotiate("compute 2.90, placement 1.14") == Version(1, 14)
    assert negotiate("compute 2.90") == MIN_VERSION


@pytest.mark.parametrize("text", ["pony.horse", "1.2.3", "1", "01.2", ""])
def test_malformed_versions_are_bad_requests(text: str) -> None:
    with pytest.raises(errors.BadRequest, match="invalid version string"):
        negotiate(f"placement {text}")


@pytest.mark.parametrize("text", ["0.5", "1.40", "2.0"])
def test_out_of_range_versions_are_not_acceptable(text: str) -> None:
    with pytest.raises(errors.NotAcceptable) as raised:
        negotiate(f"placement {text}")
    assert raised.value.extra == {"min_version": "1.0", "max_version": "1.39"}


def test_features_switch_on_at_their_version() -> None:
    assert not Version(1, 13).has("nested_providers")
    assert Version(1, 14).has("nested_providers")
    assert Version(1, 39).has("any_traits")


def test_every_version_spoken_negotiates_to_itself() -> None:
    for minor in range(MIN_VERSION.minor, MAX_VERSION.minor + 1):
        assert negotiate(f"placement 1.{minor}") == Version(1, minor)


def test_only_the_canonical_spelling_is_a_version() -> None:
    with pytest.raises(errors.BadRequest, match=r"invalid version string: 1\.05"):
        negotiate("placement 1.05")
    with pytest.raises(errors.BadRequest, match="invalid version string: LATEST"):
        negotiate("placement LATEST")
