"""``X-Placement-Read-After`` on an API without a read URL: every successful
write answers with it, and a read sending it back is answered (from the
primary, the only place this API reads). With a read URL, a write's position
is read on its own connection."""

from __future__ import annotations

import uuid

import pytest

from placement_api.db.replica import POSITION, Replica
from placement_api.settings import Settings
from tests.support.client import AppClients, PlacementClient

HEADER = "X-Placement-Read-After"


async def test_every_write_answers_a_position_a_read_can_send_back(api: PlacementClient) -> None:
    name = f"rp-{uuid.uuid4().hex[:8]}"
    created = await api.post("/resource_providers", json={"name": name})
    assert created.status_code == 200, created.text
    token = created.headers[HEADER]

    read = await api.get(f"/resource_providers?name={name}", headers={HEADER: token})
    assert read.status_code == 200, read.text
    assert [p["name"] for p in read.json()["resource_providers"]] == [name]

    trait = await api.put("/traits/CUSTOM_READ_AFTER")
    assert trait.status_code in (201, 204)
    assert trait.headers[HEADER] == token


async def test_a_failed_write_and_a_read_answer_no_position(api: PlacementClient) -> None:
    refused = await api.post("/resource_providers", json={"name": ""})
    assert refused.status_code == 400
    assert HEADER not in refused.headers
    assert HEADER not in (await api.get("/resource_providers")).headers


async def test_a_malformed_position_is_a_400_naming_the_header(api: PlacementClient) -> None:
    response = await api.get("/resource_providers", headers={HEADER: "yesterday"})
    assert response.status_code == 400
    assert HEADER in response.json()["errors"][0]["detail"]


async def test_a_writes_position_is_read_on_its_own_connection_after_its_commit(
    settings: Settings, backend: str, apps: AppClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a read URL (here the primary itself, always current), a write
    answers its WAL position without a unit of work of its own on the primary."""
    if backend != "postgresql":
        pytest.skip("a read URL is PostgreSQL's")

    async def second_unit(self: Replica) -> str:
        raise AssertionError("the position was read through a second unit of work")

    monkeypatch.setattr(Replica, "position", second_unit)
    async with apps(database_read_url=settings.database_url) as api:
        name = f"rp-{uuid.uuid4().hex[:8]}"
        created = await api.post("/resource_providers", json={"name": name})
        assert created.status_code == 200, created.text
        position = created.headers[HEADER]
        assert POSITION.fullmatch(position), position
        read = await api.get(f"/resource_providers?name={name}", headers={HEADER: position})
        assert [p["name"] for p in read.json()["resource_providers"]] == [name]


async def test_a_write_whose_position_cannot_be_read_sends_its_reader_to_the_primary(
    settings: Settings, backend: str, apps: AppClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed, but the primary is going away before its position is read
    (as in a switchover): the answer stands and says ``primary``, so the next
    read cannot be served stale by a standby."""
    if backend != "postgresql":
        pytest.skip("a read URL is PostgreSQL's")

    async def shutting_down(self: Replica) -> str:
        raise ConnectionError("the database system is shutting down")

    monkeypatch.setattr("placement_api.db.session.position_after_commit", lambda _session: None)
    monkeypatch.setattr(Replica, "position", shutting_down)
    async with apps(database_read_url=settings.database_url) as api:
        name = f"rp-{uuid.uuid4().hex[:8]}"
        created = await api.post("/resource_providers", json={"name": name})
        assert created.status_code == 200, created.text
        assert created.headers[HEADER] == "primary"
        read = await api.get(f"/resource_providers?name={name}", headers={HEADER: "primary"})
        assert [p["name"] for p in read.json()["resource_providers"]] == [name]
