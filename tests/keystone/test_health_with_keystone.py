"""/healthcheck under Keystone: the status for anyone, the details for admins."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.keystone.conftest import ON_KEYSTONE_WORKER, Cloud, keystone_app, write_placement_conf

pytestmark = ON_KEYSTONE_WORKER

JSON = {"accept": "application/json"}


@pytest.fixture
def conf(tmp_path: Path, cloud: Cloud) -> Path:
    return write_placement_conf(tmp_path, cloud)


async def test_healthcheck_needs_no_token_and_shows_details_to_admins_only(
    database_url: str, conf: Path, cloud: Cloud
) -> None:
    async with keystone_app(database_url, conf) as http:
        anonymous = await http.get("/healthcheck", headers=JSON)
        invalid = await http.get("/healthcheck", headers={"x-auth-token": "nonsense", **JSON})
        reader = await http.get(
            "/healthcheck",
            headers={"x-auth-token": cloud.callers["project_reader"].token, **JSON},
        )
        admin = await http.get(
            "/healthcheck", headers={"x-auth-token": cloud.callers["admin"].token, **JSON}
        )
        head = await http.head("/healthcheck")
    for plain in (anonymous, invalid, reader):
        assert plain.status_code == 200
        assert plain.json() == {"detailed": False, "reasons": ["OK"]}
    assert admin.status_code == 200
    assert admin.json()["detailed"] is True
    assert admin.json()["reasons"][0]["class"] == "DatabaseCheck"
    assert head.status_code == 204
