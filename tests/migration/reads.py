"""The GET requests both servers must answer alike, and the comparison."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.migration.cloud import Cloud

FLAVOR = "resources=VCPU:1,MEMORY_MB:512"


def _provider_listings(cloud: Cloud) -> list[tuple[str, str]]:
    agg0, agg1 = cloud.aggregates
    cn1, cn2 = cloud.providers["cn1"], cloud.providers["cn2"]
    listings = [
        ("1.0", "/resource_providers"),
        ("1.0", "/resource_providers?name=cn2"),
        ("1.0", f"/resource_providers?uuid={cn1}"),
        ("1.3", f"/resource_providers?member_of={agg0}"),
        ("1.3", f"/resource_providers?member_of=in:{agg0},{agg1}"),
        ("1.4", "/resource_providers?resources=VCPU:2"),
        ("1.4", "/resource_providers?resources=DISK_GB:50,CUSTOM_MAGIC:1"),
        ("1.14", f"/resource_providers?in_tree={cn1}"),
        ("1.14", f"/resource_providers?in_tree={cn2}&resources=VCPU:1"),
        ("1.18", "/resource_providers?required=HW_CPU_X86_AVX2"),
        ("1.18", "/resource_providers?required=HW_NUMA_ROOT&resources=VCPU:8"),
        ("1.22", "/resource_providers?required=!CUSTOM_GOLD,HW_CPU_X86_AVX2"),
        ("1.24", f"/resource_providers?member_of={agg0}&member_of={agg1}"),
        ("1.32", f"/resource_providers?member_of=!{agg1}"),
        ("1.39", "/resource_providers?required=in:CUSTOM_GOLD,CUSTOM_RACK_1"),
        ("1.39", "/resource_providers"),
    ]
    return listings


def _per_provider(cloud: Cloud) -> list[tuple[str, str]]:
    reads = []
    for provider in cloud.providers.values():
        base = f"/resource_providers/{provider}"
        reads += [
            ("1.14", base),
            ("1.0", f"{base}/inventories"),
            ("1.19", f"{base}/aggregates"),
            ("1.6", f"{base}/traits"),
            ("1.0", f"{base}/usages"),
            ("1.0", f"{base}/allocations"),
        ]
    # Older renderings, and a single inventory, of one provider.
    cn2 = f"/resource_providers/{cloud.providers['cn2']}"
    reads += [("1.0", cn2), ("1.1", f"{cn2}/aggregates"), ("1.0", f"{cn2}/inventories/VCPU")]
    return reads


def _per_consumer(cloud: Cloud) -> list[tuple[str, str]]:
    reads = []
    for consumer in [*cloud.consumers.values(), "00000000-0000-0000-0000-000000000001"]:
        reads += [
            (version, f"/allocations/{consumer}") for version in ("1.0", "1.12", "1.28", "1.38")
        ]
    for project, user in zip(cloud.projects, cloud.users, strict=True):
        for version in ("1.9", "1.38"):
            reads += [
                (version, f"/usages?project_id={project}"),
                (version, f"/usages?project_id={project}&user_id={user}"),
            ]
    reads.append(("1.38", f"/usages?project_id={cloud.projects[0]}&consumer_type=INSTANCE"))
    reads.append(("1.38", f"/usages?project_id={cloud.projects[0]}&consumer_type=unknown"))
    return reads


def _candidates(cloud: Cloud) -> list[tuple[str, str]]:
    agg0 = cloud.aggregates[0]
    ac = "/allocation_candidates?"
    return [
        ("1.10", f"{ac}{FLAVOR}"),
        ("1.17", f"{ac}{FLAVOR}&required=HW_CPU_X86_AVX2"),
        ("1.21", f"{ac}{FLAVOR}&member_of={agg0}"),
        ("1.29", f"{ac}{FLAVOR},DISK_GB:10"),
        ("1.29", f"{ac}resources=VCPU:2&resources1=SRIOV_NET_VF:1&required1=CUSTOM_RACK_1"),
        ("1.33", f"{ac}resources_A=VCPU:1&resources_B=MEMORY_MB:256&group_policy=isolate"),
        (
            "1.36",
            f"{ac}resources_C=VCPU:1&resources_D=SRIOV_NET_VF:1&same_subtree=_C,_D&group_policy=none",
        ),
        ("1.39", f"{ac}{FLAVOR}&required=in:CUSTOM_GOLD,CUSTOM_RACK_1"),
        ("1.39", f"{ac}resources=CUSTOM_MAGIC:1,DISK_GB:10"),
        ("1.39", f"{ac}resources=DISK_GB:100&limit=5"),
    ]


def upstream_answers(backend: str, version: str, path: str) -> bool:
    """Upstream 16.0.0 on PostgreSQL fails GET /usages from 1.38 on (500, a
    GroupingError in its consumer-type query); MariaDB's run compares those."""
    return not (backend == "postgresql" and version == "1.38" and path.startswith("/usages"))


def read_requests(cloud: Cloud, backend: str) -> list[tuple[str, str]]:
    """(microversion, path) pairs covering every read the cloud's data shows in
    that upstream answers on this backend."""
    shared = [
        ("1.2", "/resource_classes"),
        ("1.7", "/resource_classes/CUSTOM_FPGA"),
        ("1.6", "/traits?name=startswith:CUSTOM_"),
        ("1.6", "/traits?associated=true"),
        ("1.6", "/traits?name=in:CUSTOM_GOLD,HW_NUMA_ROOT"),
    ]
    every = [
        *shared,
        *_provider_listings(cloud),
        *_per_provider(cloud),
        *_per_consumer(cloud),
        *_candidates(cloud),
    ]
    return [(version, path) for version, path in every if upstream_answers(backend, version, path)]


def unordered(value: Any) -> Any:
    """The value with every list sorted, so two answers compare up to ordering."""
    if isinstance(value, dict):
        return {key: unordered(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [unordered(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return value


def answer(client: httpx.Client, version: str, path: str) -> tuple[int, Any]:
    response = client.get(path, headers={"openstack-api-version": f"placement {version}"})
    body = response.json() if response.status_code == 200 else None
    return response.status_code, unordered(body)


def differences(
    ours: httpx.Client, theirs: httpx.Client, reads: list[tuple[str, str]]
) -> list[str]:
    """Each read whose answers differ, with both answers. Reads go a few at a
    time: they only read, and the servers serve several at once."""

    def compare(read: tuple[str, str]) -> str | None:
        version, path = read
        mine, upstream = answer(ours, version, path), answer(theirs, version, path)
        if mine == upstream:
            return None
        return f"{version} {path}:\n  ours     {mine}\n  upstream {upstream}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        return [found for found in pool.map(compare, reads) if found]


def touched_by_writes(cloud: Cloud, backend: str) -> list[tuple[str, str]]:
    """The reads whose answers the writes of the test change."""
    changed = {cloud.providers["cn2"], cloud.providers["cn1_numa0"], cloud.consumers["vm1"]}
    return [
        (version, path)
        for version, path in read_requests(cloud, backend)
        if any(uuid in path for uuid in changed)
        or path.startswith(("/usages", "/allocation_candidates", "/resource_providers?"))
    ]
