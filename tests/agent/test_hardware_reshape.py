"""Turning NUMA providers on under running instances of a host with dedicated CPUs
and huge pages: PCPU, VCPU, MEMORY_MB and the huge pages of every consumer move to
the cells in one reshape, nothing lost, nothing over capacity (checked in the DB)."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any

import httpx

from agent.placement import AgentPlacement
from agent.reporting_pass import Outcome, ReportingPass
from placement_client import PlacementClient
from tests.agent.conftest import PlacementServer, one_pass
from tests.agent.hardware_hosts import (
    CAPABLE_HOST_OPTIONS,
    overcommitted,
    recorded_host,
    stored_allocations,
)
from tests.agent.test_conflicts_and_ownership import allocate
from tests.agent.test_tree_changes import Requests

# Sized so that only some placements fit the cells: the 1 GiB pages live in cell 3
# alone, the 2 MiB pages in cells 0 (2048 MiB) and 1 (1024 MiB).
INSTANCES = [
    {"PCPU": 4, "MEMORY_MB": 2048},
    {"PCPU": 3, "CUSTOM_HUGEPAGES_1GB": 2048},
    {"VCPU": 2, "CUSTOM_HUGEPAGES_2MB": 2048},
    {"VCPU": 1, "MEMORY_MB": 512, "CUSTOM_HUGEPAGES_2MB": 1024},
]


def summed(stored: dict[str, dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for held in stored.values():
        for rc, amount in held.items():
            total[rc] = total.get(rc, 0) + amount
    return total


async def test_numa_providers_turned_on_move_pinned_and_huge_page_allocations_once(
    agent_settings: Any, placement: httpx.Client, placement_server: PlacementServer, tmp_path: Path
) -> None:
    options = {**CAPABLE_HOST_OPTIONS, "numa_providers": False}
    settings = agent_settings(tmp_path / "reshaped.xml", **options)
    first = await one_pass(settings, recorded_host)
    assert first.outcome is Outcome.SYNCED, first.error
    consumers = [str(uuid.uuid4()) for _ in INSTANCES]
    for consumer, resources in zip(consumers, INSTANCES, strict=True):
        allocate(placement, consumer, first.provider_uuid, resources)

    requests = Requests()
    on = settings.model_copy(update={"numa_providers": True})
    running = functools.partial(recorded_host, running=tuple(consumers))
    result = await one_pass(on, running, event_hooks={"request": [requests]})

    assert result.outcome is Outcome.SYNCED, result.error
    assert requests.reshapes == 1
    database = placement_server.database_url
    for consumer, resources in zip(consumers, INSTANCES, strict=True):
        stored = await stored_allocations(database, consumer)
        assert summed(stored) == resources, consumer
        root_name = result.provider_name
        moved = {rc for p, held in stored.items() if p != root_name for rc in held}
        assert moved == set(resources), stored  # every class now on a cell
    assert await overcommitted(database) == []


async def test_reshape_without_the_service_role_fails_saying_so_and_moves_nothing(
    agent_settings: Any, placement: httpx.Client, placement_server: PlacementServer, tmp_path: Path
) -> None:
    settings = agent_settings(tmp_path / "no-service.xml", **CAPABLE_HOST_OPTIONS | {
        "numa_providers": False})  # fmt: skip
    first = await one_pass(settings, recorded_host)
    consumer = str(uuid.uuid4())
    allocate(placement, consumer, first.provider_uuid, {"PCPU": 2, "MEMORY_MB": 1024})

    on = settings.model_copy(update={"numa_providers": True})
    async with PlacementClient.with_token(settings.api_url, "admin", timeout=10.0) as client:
        result = await ReportingPass(on, AgentPlacement(client), recorded_host).run()

    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert "service role" in result.error
    stored = await stored_allocations(placement_server.database_url, consumer)
    assert stored == {first.provider_name: {"PCPU": 2, "MEMORY_MB": 1024}}
