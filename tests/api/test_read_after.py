"""``X-Placement-Read-After`` on an API without a read URL: every successful
write answers with it, and a read sending it back is answered (from the
primary, the only place this API reads)."""

from __future__ import annotations

import uuid

from tests.support.client import PlacementClient

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
