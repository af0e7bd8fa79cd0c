"""A small cloud written into a Placement server through its HTTP API: nested
trees, a sharing provider, custom classes and traits, aggregates, consumers
of several types (and one without), allocations across providers, a reshape."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

VERSION = "1.39"


@dataclass
class Cloud:
    providers: dict[str, str] = field(default_factory=dict)  # name -> uuid
    aggregates: list[str] = field(default_factory=list)
    consumers: dict[str, str] = field(default_factory=dict)  # name -> uuid
    projects: list[str] = field(default_factory=lambda: [str(uuid.uuid4()), str(uuid.uuid4())])
    users: list[str] = field(default_factory=lambda: [str(uuid.uuid4()), str(uuid.uuid4())])


class Writer:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def call(
        self, method: str, path: str, body: Any = None, version: str = VERSION, roles: str = ""
    ) -> Any:
        headers = {"openstack-api-version": f"placement {version}"}
        if roles:
            headers["x-roles"] = roles
        response = self.client.request(method, path, json=body, headers=headers)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    def generation(self, provider: str) -> int:
        return int(self.call("GET", f"/resource_providers/{provider}")["generation"])

    def inventories(self, provider: str, inventories: dict[str, dict[str, Any]]) -> None:
        body = {
            "resource_provider_generation": self.generation(provider),
            "inventories": inventories,
        }
        self.call("PUT", f"/resource_providers/{provider}/inventories", body)

    def traits(self, provider: str, *traits: str) -> None:
        body = {"resource_provider_generation": self.generation(provider), "traits": list(traits)}
        self.call("PUT", f"/resource_providers/{provider}/traits", body)

    def aggregates(self, provider: str, *aggregates: str) -> None:
        body = {
            "resource_provider_generation": self.generation(provider),
            "aggregates": list(aggregates),
        }
        self.call("PUT", f"/resource_providers/{provider}/aggregates", body)


def build(client: httpx.Client) -> Cloud:
    cloud, write = Cloud(), Writer(client)
    write.call("PUT", "/resource_classes/CUSTOM_FPGA", version="1.7")
    write.call("PUT", "/resource_classes/CUSTOM_MAGIC", version="1.7")
    write.call("PUT", "/traits/CUSTOM_GOLD")
    write.call("PUT", "/traits/CUSTOM_RACK_1")
    _providers(write, cloud)
    _allocations(write, cloud)
    _reshape(write, cloud)
    return cloud


def _provider(write: Writer, cloud: Cloud, name: str, parent: str | None = None) -> str:
    body: dict[str, Any] = {"name": name}
    if parent:
        body["parent_provider_uuid"] = cloud.providers[parent]
    cloud.providers[name] = write.call("POST", "/resource_providers", body)["uuid"]
    return cloud.providers[name]


def _providers(write: Writer, cloud: Cloud) -> None:
    cn1 = _provider(write, cloud, "cn1")
    numa0 = _provider(write, cloud, "cn1_numa0", "cn1")
    numa1 = _provider(write, cloud, "cn1_numa1", "cn1")
    pf0 = _provider(write, cloud, "cn1_numa0_pf0", "cn1_numa0")
    cn2 = _provider(write, cloud, "cn2")
    storage = _provider(write, cloud, "shared_storage")
    _provider(write, cloud, "cn3")
    _provider(write, cloud, "cn3_numa0", "cn3")
    cloud.aggregates = [str(uuid.uuid4()), str(uuid.uuid4())]
    write.inventories(cn1, {"CUSTOM_FPGA": {"total": 2}})
    for numa in (numa0, numa1):
        write.inventories(
            numa,
            {
                "VCPU": {"total": 8, "allocation_ratio": 2.0},
                "MEMORY_MB": {"total": 8192, "reserved": 512, "step_size": 256},
            },
        )
    write.inventories(pf0, {"SRIOV_NET_VF": {"total": 8, "max_unit": 4}})
    write.inventories(
        cn2,
        {
            "VCPU": {"total": 16, "allocation_ratio": 4.0, "max_unit": 8},
            "MEMORY_MB": {"total": 32768, "reserved": 1024, "min_unit": 256},
            "DISK_GB": {"total": 100},
            "CUSTOM_MAGIC": {"total": 5},
        },
    )
    write.inventories(storage, {"DISK_GB": {"total": 2000, "min_unit": 10, "step_size": 10}})
    write.inventories(cloud.providers["cn3"], {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 4096}})
    write.traits(cn1, "HW_CPU_X86_AVX2", "CUSTOM_GOLD")
    write.traits(numa0, "HW_NUMA_ROOT")
    write.traits(numa1, "HW_NUMA_ROOT")
    write.traits(pf0, "HW_NIC_SRIOV", "CUSTOM_RACK_1")
    write.traits(cn2, "CUSTOM_RACK_1", "HW_CPU_X86_AVX2")
    write.traits(storage, "MISC_SHARES_VIA_AGGREGATE")
    write.aggregates(cn1, cloud.aggregates[0])
    write.aggregates(cn2, *cloud.aggregates)
    write.aggregates(storage, cloud.aggregates[0])


def _allocation(
    cloud: Cloud, resources: dict[str, dict[str, int]], owner: int, kind: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "allocations": {
            cloud.providers[name]: {"resources": amounts} for name, amounts in resources.items()
        },
        "project_id": cloud.projects[owner],
        "user_id": cloud.users[owner],
        "consumer_generation": None,
    }
    if kind:
        body["consumer_type"] = kind
    return body


def _allocations(write: Writer, cloud: Cloud) -> None:
    for name in ("vm1", "vm2", "vm3", "migration1", "legacy1", "vm4"):
        cloud.consumers[name] = str(uuid.uuid4())
    write.call(
        "PUT",
        f"/allocations/{cloud.consumers['vm1']}",
        _allocation(
            cloud,
            {"cn1_numa0": {"VCPU": 2, "MEMORY_MB": 2048}, "shared_storage": {"DISK_GB": 20}},
            0,
            "INSTANCE",
        ),
    )
    vm2 = {"cn2": {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10, "CUSTOM_MAGIC": 1}}
    write.call(
        "PUT", f"/allocations/{cloud.consumers['vm2']}", _allocation(cloud, vm2, 1, "INSTANCE")
    )
    # Written again, so its consumer generation moves on.
    vm2["cn2"]["VCPU"] = 6
    body = _allocation(cloud, vm2, 1, "INSTANCE")
    body["consumer_generation"] = 1
    write.call("PUT", f"/allocations/{cloud.consumers['vm2']}", body)
    # Several consumers at once, across a tree and the sharing provider.
    write.call(
        "POST",
        "/allocations",
        {
            cloud.consumers["vm3"]: _allocation(
                cloud,
                {
                    "cn1_numa1": {"VCPU": 4, "MEMORY_MB": 1024},
                    "cn1_numa0_pf0": {"SRIOV_NET_VF": 2},
                    "cn1": {"CUSTOM_FPGA": 1},
                },
                0,
                "INSTANCE",
            ),
            cloud.consumers["migration1"]: _allocation(
                cloud, {"cn1_numa1": {"VCPU": 1, "MEMORY_MB": 512}}, 1, "MIGRATION"
            ),
        },
    )
    # A consumer without a type, as older clients wrote them.
    write.call(
        "PUT",
        f"/allocations/{cloud.consumers['legacy1']}",
        _allocation(cloud, {"shared_storage": {"DISK_GB": 100}}, 0, None),
        version="1.28",
    )
    write.call(
        "PUT",
        f"/allocations/{cloud.consumers['vm4']}",
        _allocation(cloud, {"cn3": {"VCPU": 2, "MEMORY_MB": 1024}}, 1, "INSTANCE"),
    )


def _reshape(write: Writer, cloud: Cloud) -> None:
    """cn3's VCPU and memory move to its NUMA child, with vm4's allocation."""
    cn3, numa = cloud.providers["cn3"], cloud.providers["cn3_numa0"]
    vm4 = write.call("GET", f"/allocations/{cloud.consumers['vm4']}")
    body = {
        "inventories": {
            cn3: {"resource_provider_generation": write.generation(cn3), "inventories": {}},
            numa: {
                "resource_provider_generation": write.generation(numa),
                "inventories": {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 4096}},
            },
        },
        "allocations": {
            cloud.consumers["vm4"]: {
                "allocations": {numa: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}}},
                "project_id": cloud.projects[1],
                "user_id": cloud.users[1],
                "consumer_generation": vm4["consumer_generation"],
                "consumer_type": "INSTANCE",
            }
        },
    }
    # Reshaping is for services (nova-compute) only.
    write.call("POST", "/reshaper", body, roles="admin,service,member,reader")
