"""``placement-api capacity``: the same numbers as GET /capacity, as JSON and as a table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import yaml
from sqlalchemy.engine import make_url

from placement_api.settings import Settings
from tests.support import databases
from tests.support.client import PlacementClient
from tests.support.provider_trees import TreeBuilder

EAST, WEST = str(uuid.uuid4()), str(uuid.uuid4())


@pytest.fixture
def capacity_env(tmp_path: Path) -> dict[str, str]:
    """The aggregates and flavors files, as the command's environment."""
    directory = tmp_path
    aggregates = directory / "aggregates.yaml"
    aggregates.write_text(
        yaml.safe_dump(
            {
                "aggregates": {
                    EAST: {"name": "east-racks", "availability_zone": "east"},
                    WEST: {"availability_zone": "west"},
                }
            }
        )
    )
    flavors = directory / "flavors.yaml"
    flavors.write_text(
        yaml.safe_dump(
            {
                "m1.small": {"vcpus": 1, "memory_mb": 1024},
                "m1.fast": {
                    "vcpus": 2,
                    "memory_mb": 1024,
                    "extra_specs": {"trait:CUSTOM_FAST": "required"},
                },
            }
        )
    )
    return {
        "PLACEMENT_CAPACITY_AGGREGATES_FILE": str(aggregates),
        "PLACEMENT_CAPACITY_FLAVORS_FILE": str(flavors),
    }


def _capacity(url: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_")}
    return subprocess.run(
        [sys.executable, "-m", "placement_api", "capacity", *args],
        env=environment | env | {"PLACEMENT_DATABASE_URL": url, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def settings(database_url: str, capacity_env: dict[str, str]) -> Settings:
    """The API reads the same aggregates file as the command."""
    return Settings(
        database_url=database_url,
        enforce_new_defaults=False,
        capacity_aggregates_file=Path(capacity_env["PLACEMENT_CAPACITY_AGGREGATES_FILE"]),
    )


async def _cloud(api: PlacementClient) -> None:
    """east: 8 + 4 VCPU (the 8 fast); west: 16 VCPU; memory to spare everywhere."""
    trees = TreeBuilder(api)
    trees.aggregates.update({"east": EAST, "west": WEST})
    memory = {"total": 65536}
    await trees.provider(
        "host-e1",
        inventory={"VCPU": 8, "MEMORY_MB": memory},
        traits=["CUSTOM_FAST"],
        aggregates=["east"],
    )
    await trees.provider("host-e2", inventory={"VCPU": 4, "MEMORY_MB": memory}, aggregates=["east"])
    await trees.provider("host-w", inventory={"VCPU": 16, "MEMORY_MB": memory}, aggregates=["west"])
    await trees.allocate({"host-w": {"VCPU": 6, "MEMORY_MB": 1024}})


async def test_json_is_the_api_report_per_flavor(
    api: PlacementClient, database_url: str, capacity_env: dict[str, str]
) -> None:
    await _cloud(api)
    env = capacity_env
    result = _capacity(
        database_url, env, "--flavor", "m1.fast", "--flavor", "big=VCPU:4", "--by", "az", "--json"
    )
    assert result.returncode == 0, result.stderr
    fast, big = json.loads(result.stdout)
    assert (fast["flavor"], big["flavor"]) == ("m1.fast", "big")
    # m1.fast needs CUSTOM_FAST: host-e1 only, 8 // 2.
    assert fast["fits"] == 4
    assert [(z["name"], z["fits"]) for z in fast["availability_zones"]] == [
        ("east", 4),
        ("west", 0),
    ]
    # big: 2 + 1 in east, 10 // 4 = 2 in west.
    assert [(z["name"], z["fits"]) for z in big["availability_zones"]] == [
        ("east", 3),
        ("west", 2),
    ]
    api_answer = (await api.get("/capacity?resources=VCPU:4&by=az")).json()
    assert {k: v for k, v in big.items() if k != "flavor"} == api_answer


async def test_the_table_shows_fits_per_flavor_and_free_per_class(
    api: PlacementClient, database_url: str, capacity_env: dict[str, str]
) -> None:
    await _cloud(api)
    result = _capacity(database_url, capacity_env, "--by", "aggregate")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    # Every flavor of the flavors file, in name order: m1.fast, then m1.small.
    # Columns: zone, hosts, m1.fast fits, m1.small fits, MEMORY_MB free, VCPU free.
    assert rows["east-racks"] == ["east", "2", "4", "12", "131072 of 131072", "12 of 12"]
    assert rows[WEST] == ["west", "1", "0", "10", "64512 of 65536", "10 of 16"]
    assert rows["all"] == ["", "", "4", "22", "195584 of 196608", "22 of 28"]


async def test_a_malformed_flavor_is_one_line_and_exit_2(
    api: PlacementClient, database_url: str, capacity_env: dict[str, str]
) -> None:
    env = capacity_env
    for flavor, message in (
        ("big=VCPU:0", "requires amount >= 1"),
        ("big=VCPU:1:required=CUSTOM_NOPE", "No such trait(s): CUSTOM_NOPE"),
        ("m9.huge", "no flavor 'm9.huge'"),
    ):
        result = _capacity(database_url, env, "--flavor", flavor)
        assert result.returncode == 2, result.stdout
        assert message in result.stderr
        assert "Traceback" not in result.stderr


def _rows(table: str) -> dict[str, list[str]]:
    """Data rows of a rich table by their first cell."""
    found: dict[str, list[str]] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│┃").split("│")]
        if len(cells) > 1 and cells[0]:
            found[cells[0]] = cells[1:]
    return found


async def test_a_disabled_host_is_left_out_and_counted_apart_unless_included(
    api: PlacementClient, database_url: str, capacity_env: dict[str, str]
) -> None:
    await _cloud(api)
    trees = TreeBuilder(api)
    response = await api.get("/resource_providers?name=host-w")
    trees.uuids["host-w"] = response.json()["resource_providers"][0]["uuid"]
    await trees.set_traits("host-w", ["COMPUTE_STATUS_DISABLED"])
    table = _capacity(database_url, capacity_env, "--flavor", "m1.small", "--by", "host")
    assert table.returncode == 0, table.stderr
    rows = _rows(table.stdout)
    assert "host-w" not in rows
    assert rows["all"][2] == "12"  # host-e1 and host-e2: 8 + 4
    assert "10 m1.small more fit on 1 hosts that are down or disabled" in table.stdout
    # Every host counted, each with its state.
    counted = _capacity(
        database_url,
        capacity_env,
        "--flavor",
        "m1.small",
        "--by",
        "host",
        "--include-unavailable",
    )
    assert counted.returncode == 0, counted.stderr
    rows = _rows(counted.stdout)
    assert (rows["host-w"][0], rows["host-e1"][0]) == ("disabled", "enabled")
    assert rows["all"][2] == "22"
    assert "of the fits, 10 m1.small are on them" in counted.stdout


@pytest.fixture(params=databases.BACKENDS)
def never_served_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A database `db upgrade` made that no server has started on: no standard names yet."""
    with databases.migrated_database(request.param) as url:
        yield url


async def test_a_database_no_server_has_served_reports_nothing_fits(
    never_served_url: str,
) -> None:
    flavor = "small=VCPU:1,MEMORY_MB:512:required=HW_CPU_X86_AVX2"
    result = _capacity(never_served_url, {}, "--flavor", flavor, "--json")
    assert result.returncode == 0, result.stderr
    [report] = json.loads(result.stdout)
    assert (report["flavor"], report["fits"]) == ("small", 0)
    # A custom name is still the operator's mistake, as GET /capacity says.
    custom = _capacity(never_served_url, {}, "--flavor", "odd=CUSTOM_ODD:1")
    assert custom.returncode == 2
    assert "No such resource class CUSTOM_ODD" in custom.stderr


async def test_credentials_that_may_only_read_still_get_the_report(
    api: PlacementClient, database_url: str, capacity_env: dict[str, str]
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("roles are PostgreSQL's")
    await _cloud(api)
    role = f"reader_{uuid.uuid4().hex[:8]}"
    owner = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        await owner.execute(f"CREATE ROLE {role} LOGIN")
        await owner.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        url = make_url(database_url).set(username=role).render_as_string(hide_password=False)
        result = _capacity(url, capacity_env, "--flavor", "m1.small", "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)[0]["fits"] == 22
    finally:
        await owner.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
        await owner.execute(f"DROP ROLE {role}")
        await owner.close()
