"""The service's own endpoints that need no allocation candidates: plugins, health,
validation errors, and the OpenAPI document."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from httpx import ASGITransport

from scheduler.serving.openapi import render_openapi_yaml
from scheduler.serving.service import create_app
from scheduler.settings import SchedulerSettings
from tests.support.server import free_port

OPENAPI_FILE = Path(__file__).parents[2] / "openapi-scheduler.yaml"


@pytest.fixture
async def service() -> AsyncIterator[httpx.AsyncClient]:
    settings = SchedulerSettings(
        api_url=f"http://127.0.0.1:{free_port()}",  # nothing listens there
        enabled_filters=["compute_enabled", "server_group_anti_affinity"],
        enabled_weighers=["ram", "cpu", "instance_count"],
        weigher_multipliers={"cpu": 0.5, "instance_count": 0},
        strategy="pack",
        request_timeout=2,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scheduler") as http:
            yield http


async def test_filters_lists_the_enabled_ones_in_order(service: httpx.AsyncClient) -> None:
    body = (await service.get("/v1/filters")).json()
    assert [f["name"] for f in body["enabled"]] == ["compute_enabled", "server_group_anti_affinity"]
    assert "availability_zone" in body["available"]


async def test_weighers_show_effective_multipliers_with_the_strategy(
    service: httpx.AsyncClient,
) -> None:
    body = (await service.get("/v1/weighers")).json()
    assert body["strategy"] == "pack"
    assert {w["name"]: w["multiplier"] for w in body["enabled"]} == {"ram": -1.0, "cpu": -0.5}


async def test_health_is_503_when_placement_cannot_be_reached(service: httpx.AsyncClient) -> None:
    response = await service.get("/health")
    assert response.status_code == 503
    assert response.json() == {"status": "degraded", "placement_reachable": False}


async def test_schedule_is_503_when_placement_cannot_be_reached(service: httpx.AsyncClient) -> None:
    response = await service.post("/v1/schedule", json={"resources": {"VCPU": 1}})
    assert response.status_code == 503
    assert response.json()["errors"][0]["code"] == "scheduler.placement_unavailable"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"resources": {"VCPU": 0}}, "resources.VCPU: Input should be greater than or equal to 1"),
        ({"flavor": {"vcpus": 1, "memory_mb": 1, "extra_specs": {"trait:X": "yes"}}}, "required"),
        (
            {"resources": {"VCPU": 1}, "hints": {"group": {"uuid": "x", "policy": "affinity"}}},
            "uuid",
        ),
    ],
)
async def test_invalid_requests_get_a_400_placement_style_error(
    service: httpx.AsyncClient, body: dict[str, object], detail: str
) -> None:
    response = await service.post("/v1/schedule", json=body)
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["code"] == "scheduler.invalid_request"
    assert detail in error["detail"]
    assert error["request_id"].startswith("req-")


def test_an_unknown_plugin_stops_the_service_from_being_built() -> None:
    with pytest.raises(ValueError, match="unknown filter gpu"):
        create_app(SchedulerSettings(enabled_filters=["gpu"]))


def test_openapi_document_describes_the_service_and_is_current() -> None:
    document = yaml.safe_load(render_openapi_yaml())
    assert set(document["paths"]) >= {"/v1/schedule", "/v1/release", "/v1/filters", "/v1/weighers"}
    conflict = document["paths"]["/v1/schedule"]["post"]["responses"]["409"]
    assert conflict["content"]["application/json"]["schema"]["$ref"].endswith("NoValidHostBody")
    assert OPENAPI_FILE.read_text() == render_openapi_yaml(), "run: make openapi"
