"""``placement-api status``, ``audit``, ``policy`` and one-line database errors."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from placement_api.db import migrations
from tests.api.allocation_helpers import new_uuid, provider_with, put_allocations
from tests.db.test_cli import run_cli
from tests.support.client import PlacementClient


def run_in(directory: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_")}
    return subprocess.run(
        [sys.executable, "-m", "placement_api", *args],
        env=environment | env,
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_db_current_outside_a_checkout_says_what_is_missing_in_one_line(tmp_path: Path) -> None:
    result = run_in(tmp_path, "db", "current")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 3, result.stderr
    assert "Traceback" not in result.stderr
    assert str(tmp_path / "var" / "placement.sqlite") in " ".join(lines)
    assert "placement-api db upgrade" in " ".join(lines)
    assert not (tmp_path / "var").exists()


def test_db_current_exits_1_until_the_schema_is_upgraded(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite"
    migrations.upgrade(url, "base")
    (tmp_path / "placement.sqlite").touch()
    stale = run_cli("db", "current", url=url)
    assert stale.returncode == 1
    assert "out of date" in stale.stdout
    assert run_cli("db", "upgrade", url=url).returncode == 0
    current = run_cli("db", "current", url=url)
    assert current.returncode == 0
    assert "(current)" in current.stdout


def test_unreachable_postgresql_is_one_line_naming_the_url(tmp_path: Path) -> None:
    url = "postgresql+asyncpg://placement:secret@127.0.0.1:9/placement"
    for command in (("db", "current"), ("db", "upgrade"), ("audit",), ("serve", "--port", "0")):
        result = run_in(
            tmp_path,
            *command,
            PLACEMENT_DATABASE_URL=url,
            PLACEMENT_DATABASE_WAIT_TIMEOUT="0",
        )
        assert result.returncode == 2, (command, result.stderr)
        assert "Traceback" not in result.stderr
        assert "127.0.0.1:9/placement" in result.stderr
        assert "secret" not in result.stderr


def test_status_fails_on_an_out_of_date_schema_and_a_broken_policy_file(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/placement.sqlite"
    migrations.upgrade(url, "base")
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:list": [unclosed\n')
    result = _status(url, policy)
    assert result.returncode == 2
    assert "db upgrade" in result.stdout
    assert "not valid YAML or JSON" in result.stdout.replace("\n", " ").replace("│", " ")


def _status(url: str, policy: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url, COLUMNS="250")
    if policy is not None:
        env["PLACEMENT_POLICY_FILE"] = str(policy)
    return subprocess.run(
        [sys.executable, "-m", "placement_api", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_status_warns_about_noauth2_on_a_current_database(database_url: str) -> None:
    result = _status(database_url)
    assert result.returncode == 1, result.stdout
    assert "Success" in result.stdout
    assert "noauth2" in result.stdout


def test_policy_list_shows_the_policy_files_override(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:list": "role:reader"\n')
    result = subprocess.run(
        [sys.executable, "-m", "placement_api", "policy", "list", "--json"],
        env=dict(os.environ, PLACEMENT_POLICY_FILE=str(policy)),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rules = {rule["name"]: rule for rule in json.loads(result.stdout)}
    listed = rules["placement:resource_providers:list"]
    assert listed["check"] == "role:reader"
    assert listed["from_file"] is True
    assert rules["placement:resource_providers:create"]["from_file"] is False


def test_policy_sample_is_every_rule_commented_out(tmp_path: Path) -> None:
    sample = tmp_path / "policy.yaml.sample"
    result = run_in(tmp_path, "policy", "sample", "--output-file", str(sample))
    assert result.returncode == 0, result.stderr
    text = sample.read_text()
    assert '#"placement:resource_providers:list": "rule:admin_or_service_api"' in text
    assert '#"admin_api": "role:admin"' in text


async def _break_rows(database_url: str, statements: list[str]) -> None:
    """Write rows the API would refuse, foreign keys off."""
    if database_url.startswith("sqlite"):
        path = database_url.split(":///", 1)[1]

        def write() -> None:
            connection = sqlite3.connect(path, isolation_level=None)
            try:
                connection.execute("PRAGMA foreign_keys=OFF")
                for statement in statements:
                    connection.execute(statement)
            finally:
                connection.close()

        await asyncio.to_thread(write)
        return
    connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        async with connection.transaction():
            await connection.execute("SET LOCAL session_replication_role = replica")
            for statement in statements:
                await connection.execute(statement)
    finally:
        await connection.close()


async def _rows(database_url: str, query: str) -> list[tuple[object, ...]]:
    if database_url.startswith("sqlite"):
        connection = sqlite3.connect(database_url.split(":///", 1)[1])
        try:
            return list(connection.execute(query))
        finally:
            connection.close()
    pg = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        return [tuple(row) for row in await pg.fetch(query)]
    finally:
        await pg.close()


def _audit(database_url: str, *args: str) -> tuple[int, dict[str, Any]]:
    result = run_cli("audit", "--json", *args, url=database_url)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


async def test_audit_finds_and_fixes_rows_written_behind_the_apis_back(
    api: PlacementClient, database_url: str
) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    crowded = await provider_with(api, {"VCPU": {"total": 4}})
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {host: {"VCPU": 2}})).status_code == 204
    assert (await put_allocations(api, new_uuid(), {crowded: {"VCPU": 3}})).status_code == 204
    [(host_id,)] = await _rows(
        database_url, f"SELECT id FROM resource_providers WHERE uuid = '{host}'"
    )
    [(consumer_id, project_id, user_id)] = await _rows(
        database_url, f"SELECT id, project_id, user_id FROM consumers WHERE uuid = '{consumer}'"
    )
    [(vcpu_id,)] = await _rows(database_url, "SELECT id FROM resource_classes WHERE name = 'VCPU'")
    empty_consumer, ownerless = new_uuid(), new_uuid()
    crowded_id = (
        await _rows(database_url, f"SELECT id FROM resource_providers WHERE uuid = '{crowded}'")
    )[0][0]
    await _break_rows(
        database_url,
        [
            f"UPDATE inventories SET used = 7 WHERE resource_provider_id = {host_id} "
            f"AND resource_class_id = {vcpu_id}",
            f"UPDATE inventories SET total = 2 WHERE resource_provider_id = {crowded_id}",
            f"DELETE FROM inventories WHERE resource_provider_id = {host_id} "
            f"AND resource_class_id <> {vcpu_id}",
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, "
            f"created_at) SELECT {host_id}, {consumer_id}, id, 64, CURRENT_TIMESTAMP "
            "FROM resource_classes WHERE name = 'MEMORY_MB'",
            "INSERT INTO consumers (uuid, project_id, user_id, generation, created_at) "
            f"VALUES ('{empty_consumer}', {project_id}, {user_id}, 0, CURRENT_TIMESTAMP)",
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, "
            f"created_at) VALUES (987654, {consumer_id}, {vcpu_id}, 1, CURRENT_TIMESTAMP)",
            # No foreign keys hold these out (migration 0006): only the API does.
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, "
            f"created_at) VALUES ({crowded_id}, 876543, {vcpu_id}, 1, CURRENT_TIMESTAMP)",
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, "
            f"created_at) VALUES ({crowded_id}, {consumer_id}, 999999, 1, CURRENT_TIMESTAMP)",
            "INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, "
            f"created_at) VALUES ('{ownerless}', 765432, {user_id}, 4321, 1, CURRENT_TIMESTAMP)",
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, "
            f"created_at) SELECT {host_id}, id, {vcpu_id}, 0, CURRENT_TIMESTAMP "
            f"FROM consumers WHERE uuid = '{ownerless}'",
        ],
    )

    code, report = _audit(database_url)
    assert code == 1
    found = {(f["check"], f["subject"]) for f in report["findings"]}
    assert found == {
        ("allocation_on_missing_provider", consumer),
        ("allocation_of_missing_consumer", "consumer id 876543"),
        ("allocation_of_missing_class", consumer),
        ("usage_drift", f"{host} VCPU"),
        # Counting the allocation of the missing consumer; gone once it is deleted.
        ("usage_drift", f"{crowded} VCPU"),
        ("consumer_without_allocations", empty_consumer),
        ("over_capacity", f"{crowded} VCPU"),
        ("allocation_without_inventory", consumer),
        ("consumer_of_missing_owner", ownerless),
    }

    code, report = _audit(database_url, "--fix")
    assert code == 1
    # Fixes record no change-feed entries: followers are told to read anew.
    [(epoch,)] = await _rows(database_url, "SELECT epoch FROM change_feed_head")
    assert str(epoch).startswith("audit-")
    assert report["fixed"] == {
        "allocation_on_missing_provider": 1,
        "allocation_of_missing_consumer": 1,
        "allocation_of_missing_class": 1,
        "usage_drift": 1,
        "consumer_without_allocations": 1,
    }
    [ownerless_finding] = [f for f in report["findings"] if f["subject"] == ownerless]
    assert ownerless_finding["details"] == (
        "project id 765432 no longer exists, consumer type id 4321 no longer exists"
    )
    remaining = [f["check"] for f in report["findings"]]
    assert remaining == [
        "over_capacity",
        "allocation_without_inventory",
        "consumer_of_missing_owner",
    ]
    assert await _rows(
        database_url,
        f"SELECT used FROM inventories WHERE resource_provider_id = {host_id} "
        f"AND resource_class_id = {vcpu_id}",
    ) == [(2,)]
    assert (
        await _rows(database_url, f"SELECT id FROM consumers WHERE uuid = '{empty_consumer}'") == []
    )
    assert (
        await _rows(database_url, "SELECT id FROM allocations WHERE resource_provider_id = 987654")
        == []
    )


@pytest.mark.parametrize("fix", [False, True])
async def test_audit_of_a_consistent_database_finds_nothing(
    api: PlacementClient, database_url: str, fix: bool
) -> None:
    host = await provider_with(api, {"VCPU": {"total": 8}})
    assert (await put_allocations(api, new_uuid(), {host: {"VCPU": 2}})).status_code == 204
    code, report = _audit(database_url, *(["--fix"] if fix else []))
    assert code == 0
    assert report["findings"] == []


def test_an_invalid_setting_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    result = run_in(tmp_path, "db", "current", PLACEMENT_DATABASE_POOL_SIZE="0")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "PLACEMENT_DATABASE_POOL_SIZE" in result.stderr
