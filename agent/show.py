"""``placement-agent show``: what the agent would report, as a table or as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from agent.discovery import HostFacts
from agent.inventory import HostPlan, ProviderPlan


def plan_document(facts: HostFacts, plan: HostPlan, root_uuid_known: bool) -> dict[str, Any]:
    document = _provider_document(plan.root)
    if not root_uuid_known:
        document["uuid"] = None
    document["children"] = [_provider_document(child) for child in plan.children]
    document["domains"] = [
        {
            "uuid": domain.uuid,
            "name": domain.name,
            "active": domain.active,
            "vcpus": domain.vcpus,
            "memory_mb": domain.memory_mib,
        }
        for domain in facts.domains
    ]
    return document


def _provider_document(plan: ProviderPlan) -> dict[str, Any]:
    return {
        "name": plan.name,
        "uuid": plan.uuid,
        "parent_provider_uuid": plan.parent_uuid,
        "inventories": {
            rc: {
                "total": record.total,
                "reserved": record.reserved,
                "min_unit": record.min_unit,
                "max_unit": record.max_unit,
                "step_size": record.step_size,
                "allocation_ratio": record.allocation_ratio,
                "capacity": record.capacity,
            }
            for rc, record in sorted(plan.inventories.items())
        },
        "traits": sorted(plan.traits),
    }


def print_plan(console: Console, document: dict[str, Any]) -> None:
    for provider in [document, *document["children"]]:
        console.print(_inventory_table(provider))
        console.print("traits: " + (", ".join(provider["traits"]) or "(none)"))
        console.print()
    if document["domains"]:
        console.print(_domain_table(document["domains"]))


def _inventory_table(provider: dict[str, Any]) -> Table:
    uuid = provider["uuid"] or "uuid assigned on first report"
    table = Table(title=f"{provider['name']} ({uuid})")
    for column in ("class", "total", "reserved", "ratio", "capacity", "min", "max", "step"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for rc, record in provider["inventories"].items():
        table.add_row(
            rc,
            str(record["total"]),
            str(record["reserved"]),
            f"{record['allocation_ratio']:g}",
            str(record["capacity"]),
            str(record["min_unit"]),
            str(record["max_unit"]),
            str(record["step_size"]),
        )
    return table


def _domain_table(domains: list[dict[str, Any]]) -> Table:
    table = Table(title="domains")
    for column in ("name", "uuid", "state", "vCPU", "memory MiB"):
        table.add_column(column)
    for domain in domains:
        state = "running" if domain["active"] else "defined"
        table.add_row(
            domain["name"], domain["uuid"], state, str(domain["vcpus"]), str(domain["memory_mb"])
        )
    return table
