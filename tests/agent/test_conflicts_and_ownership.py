"""Generation races, operator changes and allocations the agent must respect."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.reporting_pass import Outcome
from tests.agent.conftest import one_pass
from tests.agent.nodes import write_node
from tests.agent.test_reporting_against_api import inventories, provider, traits


def add_trait_as_another_writer(
    placement: httpx.Client, provider_uuid: str | None, trait: str
) -> None:
    """A second writer: read the provider's traits and add one, with its generation."""
    assert provider_uuid is not None
    assert placement.put(f"/traits/{trait}").status_code in (201, 204)
    current = placement.get(f"/resource_providers/{provider_uuid}/traits").json()
    body = {
        "resource_provider_generation": current["resource_provider_generation"],
        "traits": sorted({*current["traits"], trait}),
    }
    response = placement.put(f"/resource_providers/{provider_uuid}/traits", json=body)
    assert response.status_code == 200, response.text


def put_inventory_as_operator(
    placement: httpx.Client, provider_uuid: str | None, changes: dict[str, Any]
) -> None:
    assert provider_uuid is not None
    current = placement.get(f"/resource_providers/{provider_uuid}/inventories").json()
    inventory = current["inventories"]
    for resource_class, fields in changes.items():
        inventory[resource_class] = inventory[resource_class] | fields
    body = {
        "resource_provider_generation": current["resource_provider_generation"],
        "inventories": inventory,
    }
    response = placement.put(f"/resource_providers/{provider_uuid}/inventories", json=body)
    assert response.status_code == 200, response.text


def allocate(
    placement: httpx.Client, consumer: str, provider_uuid: str | None, resources: dict[str, int]
) -> None:
    assert provider_uuid is not None
    body = {
        "allocations": {provider_uuid: {"resources": resources}},
        "project_id": str(uuid.uuid4()),
        "user_id": str(uuid.uuid4()),
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    response = placement.put(f"/allocations/{consumer}", json=body)
    assert response.status_code == 204, response.text


async def test_generation_conflict_from_a_concurrent_writer_is_retried(
    tmp_path: Path, placement, agent_settings
):
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096)
    settings = agent_settings(node)
    first = await one_pass(settings)
    write_node(node, cpus=12, memory_mib=4096)
    inventory_puts = 0

    async def race_the_agent(request: httpx.Request) -> None:
        nonlocal inventory_puts
        if request.method == "PUT" and request.url.path.endswith("/inventories"):
            inventory_puts += 1
            if inventory_puts == 1:
                add_trait_as_another_writer(placement, first.provider_uuid, "CUSTOM_RACED")

    result = await one_pass(settings, event_hooks={"request": [race_the_agent]})

    assert result.outcome is Outcome.SYNCED, result.error
    assert result.reports[0].conflicts == 1
    assert inventory_puts == 2
    assert inventories(placement, first.provider_uuid)["VCPU"]["total"] == 12
    assert "CUSTOM_RACED" in traits(placement, first.provider_uuid)


async def test_a_writer_that_always_wins_exhausts_the_bounded_retries(
    tmp_path: Path, placement, agent_settings
):
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096)
    settings = agent_settings(node, conflict_retries=2)
    first = await one_pass(settings)
    write_node(node, cpus=6, memory_mib=4096)
    attempts = 0

    async def always_race(request: httpx.Request) -> None:
        nonlocal attempts
        if request.method == "PUT" and request.url.path.endswith("/inventories"):
            attempts += 1
            add_trait_as_another_writer(placement, first.provider_uuid, f"CUSTOM_RACE_{attempts}")

    result = await one_pass(settings, event_hooks={"request": [always_race]})

    assert result.outcome is Outcome.FAILED
    assert attempts == 3
    assert "generation conflict" in (result.error or "")
    assert inventories(placement, first.provider_uuid)["VCPU"]["total"] == 4


async def test_ratio_set_by_an_operator_is_kept_unless_the_agent_config_sets_one(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096))
    first = await one_pass(settings)
    put_inventory_as_operator(placement, first.provider_uuid, {"VCPU": {"allocation_ratio": 2.0}})

    kept = await one_pass(settings)

    assert not kept.reports[0].inventory_written
    assert inventories(placement, first.provider_uuid)["VCPU"]["allocation_ratio"] == 2.0

    configured = settings.model_copy(update={"cpu_allocation_ratio": 8.0})
    await one_pass(configured)

    assert inventories(placement, first.provider_uuid)["VCPU"]["allocation_ratio"] == 8.0


async def test_reserved_amount_changed_by_an_operator_is_put_back(
    tmp_path: Path, placement, agent_settings
):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096))
    first = await one_pass(settings)
    put_inventory_as_operator(placement, first.provider_uuid, {"MEMORY_MB": {"reserved": 0}})

    await one_pass(settings)

    assert inventories(placement, first.provider_uuid)["MEMORY_MB"]["reserved"] == 512


def write_provider_config(path: Path, inventory: dict[str, Any], trait_names: list[str]) -> Path:
    import yaml

    document = {
        "meta": {"schema_version": "1.0"},
        "providers": [
            {
                "identification": {"uuid": "$COMPUTE_NODE"},
                "inventories": {"additional": [inventory] if inventory else []},
                "traits": {"additional": trait_names},
            }
        ],
    }
    path.write_text(yaml.safe_dump(document))
    return path


async def test_custom_inventory_and_traits_come_from_the_provider_config(
    tmp_path: Path, placement, agent_settings
):
    config = write_provider_config(
        tmp_path / "provider.yaml",
        {"CUSTOM_FPGA_SLOT": {"total": 4, "max_unit": 2}},
        ["CUSTOM_FAST_NVME"],
    )
    settings = agent_settings(
        write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096), provider_config=config
    )

    result = await one_pass(settings)

    assert result.outcome is Outcome.SYNCED, result.error
    fpga = inventories(placement, result.provider_uuid)["CUSTOM_FPGA_SLOT"]
    assert (fpga["total"], fpga["max_unit"]) == (4, 2)
    assert "CUSTOM_FAST_NVME" in traits(placement, result.provider_uuid)


async def test_custom_traits_of_others_survive_while_dropped_config_traits_go(
    tmp_path: Path, placement, agent_settings
):
    config = write_provider_config(tmp_path / "provider.yaml", {}, ["CUSTOM_FROM_CONFIG"])
    settings = agent_settings(
        write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096), provider_config=config
    )
    first = await one_pass(settings)
    add_trait_as_another_writer(placement, first.provider_uuid, "CUSTOM_FROM_OPERATOR")

    write_provider_config(config, {}, [])
    await one_pass(settings)

    reported = traits(placement, first.provider_uuid)
    assert "CUSTOM_FROM_OPERATOR" in reported
    assert "CUSTOM_FROM_CONFIG" not in reported
    assert {"COMPUTE_NODE", "HW_ARCH_I686"} <= reported


async def test_class_still_allocated_is_kept_while_the_rest_is_updated(
    tmp_path: Path, placement, agent_settings, caplog: pytest.LogCaptureFixture
):
    config = write_provider_config(
        tmp_path / "provider.yaml", {"CUSTOM_FPGA_SLOT": {"total": 4}}, []
    )
    node = write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096)
    settings = agent_settings(node, provider_config=config)
    first = await one_pass(settings)
    allocate(placement, str(uuid.uuid4()), first.provider_uuid, {"CUSTOM_FPGA_SLOT": 3})

    write_provider_config(config, {}, [])
    write_node(node, cpus=8, memory_mib=4096)
    with caplog.at_level("ERROR", logger="agent.reporter"):
        result = await one_pass(settings)

    assert result.outcome is Outcome.IN_USE
    assert "CUSTOM_FPGA_SLOT" in result.reports[0].held_in_use
    reported = inventories(placement, first.provider_uuid)
    assert reported["CUSTOM_FPGA_SLOT"]["total"] == 4
    assert reported["VCPU"]["total"] == 8
    assert any("CUSTOM_FPGA_SLOT" in m and "allocated" in m for m in caplog.messages)


async def test_generation_stays_what_the_server_returned(tmp_path: Path, placement, agent_settings):
    settings = agent_settings(write_node(tmp_path / "host.xml", cpus=4, memory_mib=4096))

    result = await one_pass(settings)

    assert result.reports[0].generation == provider(placement, result.provider_uuid)["generation"]
