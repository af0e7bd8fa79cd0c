"""nova-manage's everyday tasks: ``placement-api host disable|enable``, ``tree`` and
``usage``, against a database the API writes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from placement_api.db import migrations
from placement_api.operator.hosts import DISABLED_TRAIT, set_disabled
from placement_api.operator.project_usage import read_usage
from placement_api.operator.tree import read_trees
from tests.api.allocation_helpers import new_uuid, provider_with, put_allocations
from tests.db.test_cli import run_cli
from tests.support.client import PlacementClient


async def _traits(api: PlacementClient, provider: str) -> set[str]:
    return set((await api.get(f"/resource_providers/{provider}/traits")).json()["traits"])


async def _add_trait(api: PlacementClient, provider: str, name: str) -> None:
    """Add one trait the way an API client does: read, write with the generation, retry."""
    await api.put(f"/traits/{name}")
    while True:
        body = (await api.get(f"/resource_providers/{provider}/traits")).json()
        wanted = sorted({*body["traits"], name})
        payload = {
            "traits": wanted,
            "resource_provider_generation": body["resource_provider_generation"],
        }
        answer = await api.put(f"/resource_providers/{provider}/traits", json=payload)
        if answer.status_code == 200:
            return
        assert answer.status_code == 409, answer.text


async def test_disable_keeps_the_hosts_traits_and_enable_removes_only_its_own(
    api: PlacementClient, database_url: str
) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}}, name="compute-1")
    await _add_trait(api, host, "CUSTOM_GOLD")
    await _add_trait(api, host, "HW_CPU_X86_AVX2")

    # The feed from here on: the database is shared, so older entries may be pruned.
    start = (await api.get("/changes")).json()["index"]
    disabled = await set_disabled(database_url, "compute-1", disabled=True, reason="disk swap")
    assert disabled.changed
    assert disabled.uuid == host
    assert await _traits(api, host) == {"CUSTOM_GOLD", "HW_CPU_X86_AVX2", DISABLED_TRAIT}
    again = await set_disabled(database_url, host, disabled=True)
    assert not again.changed

    read = await api.get("/changes", params={"since": start, "limit": 1000})
    assert read.status_code == 200, read.text
    feed = read.json()["changes"]
    [entry] = [c for c in feed if c["resource"] == "host_status"]
    assert (entry["action"], entry["uuid"], entry["reason"]) == ("disabled", host, "disk swap")

    assert (await set_disabled(database_url, "compute-1", disabled=False)).changed
    assert await _traits(api, host) == {"CUSTOM_GOLD", "HW_CPU_X86_AVX2"}


async def test_disable_racing_trait_writers_loses_none_of_their_traits(
    api: PlacementClient, database_url: str
) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}}, name="compute-race")
    names = [f"CUSTOM_RACE_{n}" for n in range(8)]
    await asyncio.gather(
        set_disabled(database_url, host, disabled=True, reason="race"),
        *(_add_trait(api, host, name) for name in names),
    )
    assert await _traits(api, host) == {*names, DISABLED_TRAIT}


async def test_tree_nests_children_with_usage_capacity_and_disabled_state(
    api: PlacementClient, database_url: str
) -> None:
    root = await provider_with(api, {"VCPU": {"total": 8, "allocation_ratio": 2.0}}, name="cn-1")
    child = await provider_with(
        api, {"MEMORY_MB": {"total": 4096}}, name="cn-1_NUMA0", parent_provider_uuid=root
    )
    other = await provider_with(api, {"VCPU": {"total": 4}}, name="cn-2")
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {root: {"VCPU": 3}})).status_code == 204
    await set_disabled(database_url, root, disabled=True)

    [tree] = await read_trees(database_url, "cn-1")
    assert (tree.uuid, tree.disabled) == (root, True)
    assert (tree.resources["VCPU"].used, tree.resources["VCPU"].capacity) == (3, 16)
    assert [c.uuid for c in tree.children] == [child]
    assert {t.uuid for t in await read_trees(database_url, None)} >= {root, other}


async def test_usage_sums_each_projects_allocations_across_hosts(
    api: PlacementClient, database_url: str
) -> None:
    one = await provider_with(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}})
    two = await provider_with(api, {"VCPU": {"total": 8}})
    for provider, project in ((one, "alpha"), (two, "alpha"), (two, "beta")):
        amounts = {provider: {"VCPU": 2}}
        answer = await put_allocations(api, new_uuid(), amounts, project=project)
        assert answer.status_code == 204, answer.text
    await put_allocations(api, new_uuid(), {one: {"MEMORY_MB": 512}}, project="alpha")

    figures = {
        (u.project_id, u.resource_class): (u.used, u.consumers)
        for u in await read_usage(database_url, None)
    }
    assert figures == {
        ("alpha", "VCPU"): (4, 2),
        ("alpha", "MEMORY_MB"): (512, 1),
        ("beta", "VCPU"): (2, 1),
    }
    assert [u.project_id for u in await read_usage(database_url, "beta")] == ["beta"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the CLI, not the DB
async def test_the_commands_print_one_line_tables_json_and_csv(
    api: PlacementClient, database_url: str
) -> None:
    root = await provider_with(api, {"VCPU": {"total": 8}}, name="compute-cli")
    await provider_with(
        api, {"VCPU": {"total": 4}}, name="compute-cli_NUMA0", parent_provider_uuid=root
    )
    await put_allocations(api, new_uuid(), {root: {"VCPU": 2}}, project="beta")

    disabled = run_cli("host", "disable", "compute-cli", "--reason", "upkeep", url=database_url)
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout.strip() == f"compute-cli ({root}) is now disabled (upkeep)"
    unknown = run_cli("host", "enable", "no-such-host", url=database_url)
    assert unknown.returncode == 2
    assert "no-such-host" in unknown.stderr
    assert "Traceback" not in unknown.stderr

    shown = run_cli("tree", "compute-cli", "-f", "json", url=database_url)
    assert shown.returncode == 0, shown.stderr
    [document] = json.loads(shown.stdout)
    assert document["children"][0]["name"] == "compute-cli_NUMA0"
    table = run_cli("tree", url=database_url)
    assert "compute-cli_NUMA0" in table.stdout
    assert "disabled" in table.stdout
    usage = run_cli("usage", "--project", "beta", "-f", "csv", url=database_url)
    assert usage.stdout.splitlines() == ["project,resource_class,used,consumers", "beta,VCPU,2,1"]


def test_disable_works_on_a_database_the_api_never_served(tmp_path: Path) -> None:
    """Only migrated (or restored): the standard traits are not there yet."""
    url = f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite"
    migrations.upgrade(url)
    host = new_uuid()
    with sqlite3.connect(tmp_path / "placement.sqlite") as connection:
        connection.execute(
            "INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id, "
            "created_at) VALUES (1, ?, 'restored-1', 0, 1, CURRENT_TIMESTAMP)",
            (host,),
        )
    change = asyncio.run(set_disabled(url, "restored-1", disabled=True, reason="restored"))
    assert change.changed
    assert change.uuid == host
