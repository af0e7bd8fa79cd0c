"""The provider config file adds custom inventory and traits with no code change."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider_config import EMPTY_PROVIDER_CONFIG, ProviderConfigError, load_provider_config

ROOT = "7a3c1d2e-0000-4000-8000-000000000001"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "provider.yaml"
    path.write_text(text)
    return path


def test_no_path_means_no_custom_inventory():
    assert load_provider_config(None) == EMPTY_PROVIDER_CONFIG


def test_file_in_nova_shape_is_loaded(tmp_path: Path):
    path = write(
        tmp_path,
        """
meta:
  schema_version: "1.0"
providers:
  - identification:
      uuid: $COMPUTE_NODE
    inventories:
      additional:
        - CUSTOM_GPU_SLOT:
            total: 2
            reserved: 1
            allocation_ratio: 1.0
    traits:
      additional: [CUSTOM_GOLD]
  - identification:
      name: compute-1_NUMA0
    traits:
      additional: [CUSTOM_CELL_ZERO]
""",
    )

    config = load_provider_config(path)

    assert (
        config.custom_inventory_for(ROOT, "compute-1", is_root=True)["CUSTOM_GPU_SLOT"].total == 2
    )
    assert config.custom_traits_for(ROOT, "compute-1", is_root=True) == {"CUSTOM_GOLD"}
    assert config.custom_traits_for("x", "compute-1_NUMA0", is_root=False) == {"CUSTOM_CELL_ZERO"}
    assert config.custom_traits_for("x", "compute-1_NUMA1", is_root=False) == frozenset()


def test_provider_identified_by_its_uuid_matches_case_insensitively(tmp_path: Path):
    path = write(
        tmp_path,
        f"""
meta: {{schema_version: "1.0"}}
providers:
  - identification: {{uuid: "{ROOT.upper()}"}}
    traits: {{additional: [CUSTOM_BY_UUID]}}
""",
    )

    assert load_provider_config(path).custom_traits_for(ROOT, "h", True) == {"CUSTOM_BY_UUID"}


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ("inventories: {additional: [{VCPUS: {total: 4}}]}", "neither a custom class"),
        ("inventories: {additional: [{CUSTOM_X: {total: 0}}]}", "greater than 0"),
        ("inventories: {additional: [{CUSTOM_X: {total: 2, reserved: 3}}]}", "reserved"),
        ("inventories: {additional: [{CUSTOM_X: {total: 2, colour: red}}]}", "colour"),
        ("traits: {additional: [HW_CPU_X86_AVX2]}", "not a custom name"),
        ("traits: {additional: [custom_lower]}", "not a custom name"),
    ],
)
def test_invalid_entries_are_rejected_with_the_reason(tmp_path: Path, body: str, complaint: str):
    path = write(
        tmp_path,
        f"""
meta: {{schema_version: "1.0"}}
providers:
  - identification: {{uuid: $COMPUTE_NODE}}
    {body}
""",
    )

    with pytest.raises(ProviderConfigError, match=complaint):
        load_provider_config(path)


def test_identification_needs_exactly_one_of_uuid_or_name(tmp_path: Path):
    path = write(
        tmp_path,
        """
meta: {schema_version: "1.0"}
providers:
  - identification: {uuid: $COMPUTE_NODE, name: compute-1}
""",
    )

    with pytest.raises(ProviderConfigError, match="exactly one"):
        load_provider_config(path)


def test_unknown_schema_version_is_rejected(tmp_path: Path):
    with pytest.raises(ProviderConfigError, match="not supported"):
        load_provider_config(write(tmp_path, 'meta: {schema_version: "2.0"}\n'))


def test_same_provider_listed_twice_is_rejected(tmp_path: Path):
    path = write(
        tmp_path,
        """
meta: {schema_version: "1.0"}
providers:
  - identification: {name: compute-1}
  - identification: {name: compute-1}
""",
    )

    with pytest.raises(ProviderConfigError, match="more than once"):
        load_provider_config(path)


def test_unreadable_file_is_reported(tmp_path: Path):
    with pytest.raises(ProviderConfigError, match="cannot read"):
        load_provider_config(tmp_path / "absent.yaml")
    with pytest.raises(ProviderConfigError, match="cannot read"):
        load_provider_config(write(tmp_path, "meta: [unclosed\n"))
