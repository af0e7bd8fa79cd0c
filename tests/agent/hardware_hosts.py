"""Hosts for the hardware end-to-end tests: a recorded four-cell host with a NIC and a
GPU (libvirt's capabilities and node-device XML), and libvirt's test:///default."""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from typing import Any

import httpx
from sqlalchemy import text

from agent.discovery import HostFacts, RawDomain, RawHost, build_host_facts
from agent.settings import AgentSettings
from placement_api.db.engine import create_engine
from tests.agent.conftest import ADMIN_HEADERS
from tests.agent.nodes import DATA

_GIB = 1024**3
NODE_DEVICES = tuple(
    ET.tostring(device, encoding="unicode")
    for device in ET.parse(DATA / "node-devices.xml").getroot().findall("device")
)
# The recorded host's options: cells 0-1 shared, 2-3 dedicated; the NIC's VFs and the
# GPU's nvidia-222 type offered.
CAPABLE_HOST_OPTIONS: dict[str, Any] = {
    "numa_providers": True,
    "cpu_shared_set": "0-7",
    "cpu_dedicated_set": "8-15",
    "pci_device_spec": [
        {
            "vendor_id": "8086",
            "product_id": "154d",
            "resource_class": "SRIOV_NET_VF",
            "traits": ["PHYSNET_DATA"],
        }
    ],
    "enabled_mdev_types": ["nvidia-222"],
}


def recorded_host(settings: AgentSettings, running: tuple[str, ...] = ()) -> HostFacts:
    """The four-cell host with its devices, as libvirt would have answered; ``running``:
    uuids of its running domains (1 vCPU, 512 MiB each: only their presence matters)."""
    domains = [RawDomain(u, f"instance-{u[:8]}", True, [1, 524288, 524288, 1, 0]) for u in running]
    return build_host_facts(
        RawHost(
            hostname=settings.provider_name or "recorded",
            node_info=["x86_64", 36864, 16, 2400, 4, 1, 2, 2],
            memory_stats=None,
            cpu_stats=None,
            read_at=0.0,
            capabilities_xml=(DATA / "capabilities-four-cells.xml").read_text(),
            expanded_cpu_xml=None,
            domains=domains,
            instances_disk_bytes=200 * _GIB,
            node_devices_xml=NODE_DEVICES,
        )
    )


def aggregate_of(placement: httpx.Client, *root_uuids: str) -> str:
    """A new aggregate holding only these hosts, so a schedule sees nothing else."""
    aggregate = str(uuid.uuid4())
    for root in root_uuids:
        current = placement.get(f"/resource_providers/{root}/aggregates").json()
        body = {
            "aggregates": [*current["aggregates"], aggregate],
            "resource_provider_generation": current["resource_provider_generation"],
        }
        response = placement.put(
            f"/resource_providers/{root}/aggregates", json=body, headers=ADMIN_HEADERS
        )
        assert response.status_code == 200, response.text
    return aggregate


async def stored_allocations(database_url: str, consumer: str) -> dict[str, dict[str, int]]:
    """Provider name -> class -> amount, read from the database itself."""
    rows = await _rows(
        database_url,
        "SELECT rp.name, rc.name, a.used FROM allocations a "
        "JOIN consumers c ON c.id = a.consumer_id "
        "JOIN resource_providers rp ON rp.id = a.resource_provider_id "
        "JOIN resource_classes rc ON rc.id = a.resource_class_id WHERE c.uuid = :consumer",
        consumer=consumer,
    )
    found: dict[str, dict[str, int]] = {}
    for provider, resource_class, used in rows:
        found.setdefault(provider, {})[resource_class] = int(used)
    return found


async def overcommitted(database_url: str) -> list[tuple[Any, ...]]:
    """Inventories whose allocations exceed their capacity (should be none)."""
    return await _rows(
        database_url,
        "SELECT i.resource_provider_id, i.resource_class_id FROM inventories i "
        "JOIN allocations a ON a.resource_provider_id = i.resource_provider_id "
        "AND a.resource_class_id = i.resource_class_id "
        "GROUP BY i.id, i.resource_provider_id, i.resource_class_id, i.total, i.reserved, "
        "i.allocation_ratio "
        "HAVING SUM(a.used) > (i.total - i.reserved) * i.allocation_ratio",
    )


async def _rows(database_url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            result = await connection.execute(text(sql), params)
            return [tuple(row) for row in result]
    finally:
        await engine.dispose()
