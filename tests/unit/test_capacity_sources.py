"""The capacity files (``PLACEMENT_CAPACITY_AGGREGATES_FILE``, ``..._FLAVORS_FILE``):
what a good one gives, and the one line naming the file that a bad one gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from flavors.files import FlavorsFileError
from placement_api.services.capacity_sources import (
    CapacityFileError,
    flavors_from_file,
    load_zone_map,
)
from scheduler.request.flavors_file import load_flavor

RACK = "6f0c3a52-1b7e-4d2a-9c85-3e1f2a4b6d70"


def test_a_good_aggregates_file_names_aggregates_and_zones(tmp_path: Path) -> None:
    path = tmp_path / "aggregates.yaml"
    path.write_text(
        f"aggregates:\n  {RACK.upper()}:\n    name: rack-1\n    availability_zone: az1\n"
    )
    zones = load_zone_map(path, "nova")
    assert zones.info(RACK).name == "rack-1"
    assert zones.zones_of([RACK]) == ["az1"]
    assert zones.zones_of(["another"]) == ["nova"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("aggregates: [1, 2\n", "is not valid YAML: expected ',' or ']'"),
        ("aggregates:\n  rack-1:\n    name: r\n", "aggregates.rack-1: not an aggregate UUID"),
        (f"aggregates:\n  {RACK}:\n    nme: r\n", f"aggregates.{RACK}.nme: Extra inputs"),
        ("[a, list]\n", "not an aggregates mapping: the document: Input should be"),
        ("aggregates: 3\n", "aggregates: Input should be a valid dictionary"),
    ],
)
def test_a_bad_aggregates_file_is_one_line_naming_it(
    tmp_path: Path, text: str, reason: str
) -> None:
    path = tmp_path / "aggregates.yaml"
    path.write_text(text)
    with pytest.raises(CapacityFileError) as raised:
        load_zone_map(path, "nova")
    assert str(raised.value).startswith(str(path))
    assert reason in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_missing_file_says_which_one_which_setting_and_why(tmp_path: Path) -> None:
    missing = tmp_path / "gone.yaml"
    with pytest.raises(CapacityFileError) as raised:
        load_zone_map(missing, "nova")
    assert str(raised.value) == (
        f"cannot read the aggregates file {missing} (PLACEMENT_CAPACITY_AGGREGATES_FILE): "
        "No such file or directory"
    )
    with pytest.raises(CapacityFileError) as raised:
        flavors_from_file(missing)
    # The API's setting, not the scheduler's option and variable.
    assert str(raised.value) == (
        f"cannot read the flavors file {missing} (PLACEMENT_CAPACITY_FLAVORS_FILE): "
        "No such file or directory"
    )


def test_the_scheduler_names_its_own_setting_for_the_same_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone.yaml"
    with pytest.raises(FlavorsFileError) as raised:
        load_flavor(missing, "m1")
    assert str(raised.value) == (
        f"cannot read the flavors file {missing} "
        "(--flavors-file or PLACEMENT_SCHEDULER_FLAVORS_FILE): No such file or directory"
    )


def test_the_scheduler_and_the_api_word_a_bad_file_alike(tmp_path: Path) -> None:
    """One formatter for YAML's and pydantic's errors: the same line from both."""
    path = tmp_path / "flavors.yaml"
    for text in ("m1: [unclosed\n", "m1:\n  vcpus: one\n  memory_mb: 1\n"):
        path.write_text(text)
        with pytest.raises(FlavorsFileError) as scheduler:
            load_flavor(path, "m1")
        with pytest.raises(CapacityFileError) as api:
            flavors_from_file(path)
        assert str(scheduler.value) == str(api.value)
        assert "\n" not in str(scheduler.value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("m1: [unclosed\n", "is not valid YAML"),
        ("m1:\n  vcpus: one\n  memory_mb: 1\n", "m1.vcpus: Input should be a valid integer"),
        (
            "m1:\n  vcpus: 1\n  memory_mb: 1\n  extra_specs:\n    trait:AVX: maybe\n",
            "m1.extra_specs: Value error, extra spec trait:AVX must be",
        ),
        (
            "m1:\n  vcpus: 0\n  memory_mb: 0\n  extra_specs:\n    group_policy: loose\n",
            "m1.extra_specs: Value error, extra spec group_policy must be one of",
        ),
        ("m1:\n  vcpus: 0\n  memory_mb: 0\n", "flavor m1 asks for no resources"),
        (
            "m1:\n  vcpus: 1\n  memory_mb: 1\n  extra_specs:\n    resources1:VGPU: '1'\n",
            "flavor m1 has numbered request groups",
        ),
    ],
)
def test_a_bad_flavors_file_is_one_line_naming_it(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "flavors.yaml"
    path.write_text(text)
    with pytest.raises(CapacityFileError) as raised:
        flavors_from_file(path)
    assert str(path) in str(raised.value)
    assert reason in str(raised.value)
    assert "\n" not in str(raised.value)
