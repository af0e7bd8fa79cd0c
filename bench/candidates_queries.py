"""The queries the candidates benchmark asks of each variant (flat compute
nodes; nested NUMA hosts with shared disk)."""

from __future__ import annotations

from dataclasses import dataclass

import candidates_data as data

VERSION = {"openstack-api-version": "placement 1.39"}
FLAVOR = "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40"
WIDE = "&".join(f"resources{i}=PCI_DEVICE:1" for i in range(1, 9)) + "&group_policy=isolate"


@dataclass(frozen=True)
class Query:
    name: str
    path: str


def queries(variant: str, dataset: data.Dataset) -> list[Query]:
    aggregate = dataset.aggregates[0]
    ac = "/allocation_candidates?"
    if variant == "flat":
        return [
            Query("flat, limit 1000", f"{ac}{FLAVOR}&limit=1000"),
            Query(
                "flat + AVX512F, limit 1000", f"{ac}{FLAVOR}&required=HW_CPU_X86_AVX512F&limit=1000"
            ),
            Query("flat + member_of, limit 1000", f"{ac}{FLAVOR}&member_of={aggregate}&limit=1000"),
            Query(
                "flat + member_of + !CUSTOM_GPU, limit 1000",
                f"{ac}{FLAVOR}&member_of={aggregate}&required=!CUSTOM_GPU&limit=1000",
            ),
            Query(
                "flat big flavor + CUSTOM_GPU, limit 1000",
                f"{ac}resources=VCPU:16,MEMORY_MB:65536,DISK_GB:500&required=CUSTOM_GPU&limit=1000",
            ),
            Query("flat, no limit", f"{ac}{FLAVOR}"),
        ]
    return [
        Query("nested + shared disk, limit 1000", f"{ac}{FLAVOR}&limit=1000"),
        Query("nested + member_of, limit 1000", f"{ac}{FLAVOR}&member_of={aggregate}&limit=1000"),
        Query(
            "nested NUMA group + disk group, limit 1000",
            f"{ac}resources_NUMA=VCPU:2,MEMORY_MB:4096&resources_DISK=DISK_GB:40"
            "&group_policy=none&limit=1000",
        ),
        Query(
            "nested 2 NUMA isolated + disk, limit 1000",
            f"{ac}resources=DISK_GB:20&resources1=VCPU:1,MEMORY_MB:1024"
            "&resources2=VCPU:1,MEMORY_MB:1024&group_policy=isolate&limit=1000",
        ),
        Query("nested + shared disk, no limit", f"{ac}{FLAVOR}"),
        Query("wide host, 8 groups isolate, limit 1000", f"{ac}{WIDE}&limit=1000"),
    ]  # fmt: skip
