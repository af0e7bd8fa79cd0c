"""Shared by the hostile-input tests: a small world of every kind of row, and a
runner that sends one bad request and proves it changed nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from httpx import Response

from tests.api.allocation_helpers import consumer_body, new_uuid, provider_with, put_allocations
from tests.support.client import PlacementClient
from tests.support.snapshot import database_snapshot


@dataclass(frozen=True)
class World:
    """A root with inventory, a trait and an aggregate, a child, and a consumer."""

    rp: str
    child: str
    consumer: str
    aggregate: str

    def fill(self, template: str) -> str:
        """``{rp}``, ``{child}``, ... replaced (JSON's own braces are left alone)."""
        for name in ("rp", "child", "consumer", "aggregate"):
            template = template.replace(f"{{{name}}}", getattr(self, name))
        return template


async def build_world(api: PlacementClient) -> World:
    rp = await provider_with(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    child = await api.create_provider(parent_provider_uuid=rp)
    consumer, aggregate = new_uuid(), new_uuid()
    assert (await put_allocations(api, consumer, {rp: {"VCPU": 2}})).status_code == 204
    assert (await api.put("/traits/CUSTOM_HOSTILE")).status_code == 201
    shown = (await api.get(f"/resource_providers/{rp}")).json()
    traits = {"resource_provider_generation": shown["generation"], "traits": ["CUSTOM_HOSTILE"]}
    assert (await api.put(f"/resource_providers/{rp}/traits", json=traits)).status_code == 200
    aggregates = {
        "resource_provider_generation": shown["generation"] + 1,
        "aggregates": [aggregate],
    }
    assert (
        await api.put(f"/resource_providers/{rp}/aggregates", json=aggregates)
    ).status_code == 200
    return World(rp=rp, child=child["uuid"], consumer=consumer, aggregate=aggregate)


Body = Callable[[World], Any]


@dataclass(frozen=True)
class Bad:
    """One malformed request and the error it must get.

    ``path`` and a ``raw`` body are templates filled from the world; ``json``
    builds a body from it. ``detail`` must appear in the error's detail.
    """

    method: str
    path: str
    detail: str
    status: int = 400
    json: Body | None = None
    raw: str | None = None
    version: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


async def send(api: PlacementClient, world: World, bad: Bad) -> Response:
    headers = dict(bad.headers)
    content = None
    if bad.raw is not None:
        content = world.fill(bad.raw).encode()
        headers["content-type"] = "application/json"
    return await api.request(
        bad.method,
        world.fill(bad.path),
        json=bad.json(world) if bad.json else None,
        content=content,
        version=bad.version,
        headers=headers,
    )


async def assert_refused_without_change(
    api: PlacementClient, database_url: str, world: World, bad: Bad
) -> Response:
    before = await database_snapshot(database_url)
    response = await send(api, world, bad)
    assert response.status_code == bad.status, response.text
    entry = response.json()["errors"][0]
    assert entry["code"] == "placement.undefined_code"
    assert entry["request_id"] == response.headers["x-openstack-request-id"]
    assert bad.detail in entry["detail"], entry["detail"]
    assert await database_snapshot(database_url) == before
    return response


def allocation(world: World, **overrides: Any) -> dict[str, Any]:
    """A valid 1.38 PUT /allocations body for the world's consumer, then ``overrides``."""
    body = consumer_body({world.rp: {"VCPU": 2}}, generation=1)
    body.update(overrides)
    return body
