"""/healthcheck, /metrics and the access log, over the ASGI app on both backends."""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from placement_api.app import create_app
from placement_api.db import migrations
from placement_api.settings import Settings
from tests.api.allocation_helpers import new_uuid, provider_with, put_allocations
from tests.support import databases
from tests.support.client import PlacementClient

ADMIN = {"x-auth-token": "admin"}


@pytest.fixture
async def observed(settings: Settings) -> AsyncIterator[tuple[FastAPI, PlacementClient]]:
    """The app with /metrics on, and an admin client."""
    app = create_app(settings.model_copy(update={"metrics_enabled": True}))
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://placement") as http:
            yield app, PlacementClient(http)
    await _clean(settings.database_url)


async def _clean(url: str) -> None:
    from placement_api.db.engine import create_engine

    engine = create_engine(url)
    try:
        await databases.clean(engine)
    finally:
        await engine.dispose()


async def scrape(api: PlacementClient) -> Samples:
    # Prometheus' own Accept header: text formats, JSON nowhere.
    accept = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4"
    response = await api.http.get("/metrics", headers={"accept": accept, **ADMIN})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_healthcheck_answers_ok_in_text_without_a_token(api: PlacementClient) -> None:
    response = await api.http.get("/healthcheck")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "OK"


async def test_healthcheck_head_is_204_without_a_body(api: PlacementClient) -> None:
    response = await api.http.head("/healthcheck")
    assert response.status_code == 204
    assert response.content == b""


async def test_healthcheck_json_hides_details_from_non_admins(api: PlacementClient) -> None:
    for headers in ({}, {"x-auth-token": "alice"}):
        response = await api.http.get(
            "/healthcheck", headers={"accept": "application/json", **headers}
        )
        assert response.status_code == 200
        assert response.json() == {"detailed": False, "reasons": ["OK"]}


async def test_healthcheck_json_gives_admins_the_database_latency(api: PlacementClient) -> None:
    response = await api.http.get("/healthcheck", headers={"accept": "application/json", **ADMIN})
    document = response.json()
    assert document["detailed"] is True
    [reason] = document["reasons"]
    assert reason["class"] == "DatabaseCheck"
    assert reason["reason"] == "OK"
    assert reason["details"].startswith("database answered in ")


async def test_healthcheck_prefers_text_unless_json_weighs_more(api: PlacementClient) -> None:
    both = await api.http.get("/healthcheck", headers={"accept": "application/json;q=0.5, */*"})
    assert both.headers["content-type"].startswith("text/plain")
    unknown = await api.http.get("/healthcheck", headers={"accept": "image/png"})
    assert unknown.status_code == 200
    assert unknown.text == "OK"


async def test_healthcheck_is_503_while_the_disable_file_exists(
    settings: Settings, tmp_path: Path
) -> None:
    flag = tmp_path / "drain"
    app = create_app(settings.model_copy(update={"healthcheck_disable_file": flag}))
    async with (
        app.router.lifespan_context(app),
        AsyncClient(transport=ASGITransport(app=app), base_url="http://p") as http,
    ):
        assert (await http.get("/healthcheck")).status_code == 200
        flag.touch()
        response = await http.get("/healthcheck")
        assert response.status_code == 503
        assert "DISABLED BY FILE" in response.text
        assert (await http.head("/healthcheck")).status_code == 503


async def test_healthcheck_is_503_naming_the_database_when_it_is_gone(tmp_path: Path) -> None:
    source = tmp_path / "db"
    source.mkdir()
    url = f"sqlite+aiosqlite:///{source}/placement.sqlite"
    await asyncio.to_thread(migrations.upgrade, url)
    app = create_app(Settings(database_url=url))
    async with (
        app.router.lifespan_context(app),
        AsyncClient(transport=ASGITransport(app=app), base_url="http://p") as http,
    ):
        shutil.rmtree(source)
        response = await http.get("/healthcheck")
        assert response.status_code == 503
        assert response.text == "database unavailable"
        detailed = await http.get("/healthcheck", headers={"accept": "application/json", **ADMIN})
        assert "OperationalError" in detailed.json()["reasons"][0]["details"]


async def test_metrics_is_off_by_default(api: PlacementClient) -> None:
    assert (await api.http.get("/metrics", headers=ADMIN)).status_code == 404


async def test_metrics_needs_an_admin_token(observed: tuple[FastAPI, PlacementClient]) -> None:
    _, api = observed
    assert (await api.http.get("/metrics")).status_code == 401
    assert (await api.http.get("/metrics", headers={"x-auth-token": "alice"})).status_code == 403


async def test_metrics_count_requests_by_route_template(
    observed: tuple[FastAPI, PlacementClient],
) -> None:
    _, api = observed
    provider = await api.create_provider()
    route = "/resource_providers/{uuid}"
    before = await scrape(api)
    for _ in range(3):
        assert (await api.get(f"/resource_providers/{provider['uuid']}")).status_code == 200
    assert (await api.get(f"/resource_providers/{new_uuid()}")).status_code == 404
    after = await scrape(api)
    ok = value(after, "placement_http_requests_total", method="GET", route=route, status="200")
    assert ok - value(before, "placement_http_requests_total", method="GET", route=route,
                      status="200") == 3  # fmt: skip
    missing = {"method": "GET", "route": route, "status": "404"}
    assert (
        value(after, "placement_http_requests_total", **missing)
        - value(before, "placement_http_requests_total", **missing)
        == 1
    )
    latency = "placement_http_request_duration_seconds_count"
    assert (
        value(after, latency, method="GET", route=route)
        - value(before, latency, method="GET", route=route)
        == 4
    )
    assert not any(provider["uuid"] in dict(labels).get("route", "") for _, labels in after)


async def test_metrics_count_conflicts_by_kind_and_candidates_returned(
    observed: tuple[FastAPI, PlacementClient],
) -> None:
    _, api = observed
    host = await provider_with(api, {"VCPU": {"total": 2}})
    before = await scrape(api)
    assert (await put_allocations(api, new_uuid(), {host: {"VCPU": 2}})).status_code == 204
    refused = await put_allocations(api, new_uuid(), {host: {"VCPU": 1}})
    assert refused.status_code == 409
    kind = refused.json()["errors"][0].get("conflict", "")
    code = refused.json()["errors"][0]["code"]
    candidates = await api.get("/allocation_candidates", params={"resources": "VCPU:0"})
    assert candidates.status_code in (200, 400)
    found = await api.get("/allocation_candidates", params={"resources": "MEMORY_MB:1"})
    assert found.json()["allocation_requests"] == []
    after = await scrape(api)
    conflicts = "placement_conflicts_total"
    assert (
        value(after, conflicts, code=code, conflict=kind)
        - value(before, conflicts, code=code, conflict=kind)
        == 1
    )
    returned = "placement_allocation_candidates_returned_count"
    assert value(after, returned) - value(before, returned) >= 1


async def test_capacity_gauges_follow_inventories_and_usage(
    observed: tuple[FastAPI, PlacementClient],
) -> None:
    _, api = observed
    host = await provider_with(
        api,
        {
            "VCPU": {"total": 16, "reserved": 2, "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": 4096},
        },
        name="compute-1",
    )
    assert (await put_allocations(api, new_uuid(), {host: {"VCPU": 3}})).status_code == 204
    samples = await scrape(api)
    labels = {"hostname": "compute-1", "resourcetype": "VCPU"}
    assert value(samples, "openstack_placement_resource_total", **labels) == 16
    assert value(samples, "openstack_placement_resource_reserved", **labels) == 2
    assert value(samples, "openstack_placement_resource_usage", **labels) == 3
    assert value(samples, "openstack_placement_resource_allocation_ratio", **labels) == 4.0
    generation = (await api.get(f"/resource_providers/{host}")).json()["generation"]
    assert value(samples, "openstack_placement_resource_generation", **labels) == generation > 0
    memory = {"hostname": "compute-1", "resourcetype": "MEMORY_MB"}
    assert value(samples, "openstack_placement_resource_usage", **memory) == 0
    assert value(samples, "openstack_placement_resource_total", **memory) == 4096


async def test_one_access_line_per_request_names_route_user_and_project(
    api: PlacementClient, caplog: pytest.LogCaptureFixture
) -> None:
    provider = await api.create_provider()
    with caplog.at_level(logging.INFO, logger="placement_api.access"):
        response = await api.get(
            f"/resource_providers/{provider['uuid']}", headers={"x-auth-token": "admin:proj-1"}
        )
    [record] = [r for r in caplog.records if r.name == "placement_api.access"]
    assert record.request_id == response.headers["x-openstack-request-id"]  # type: ignore[attr-defined]
    assert record.route == "/resource_providers/{uuid}"  # type: ignore[attr-defined]
    assert record.status == 200  # type: ignore[attr-defined]
    assert record.user_id == "admin"  # type: ignore[attr-defined]
    assert record.project_id == "proj-1"  # type: ignore[attr-defined]
    assert record.duration_ms >= 0  # type: ignore[attr-defined]
    assert record.method == "GET"  # type: ignore[attr-defined]


async def test_an_unexpected_error_is_logged_once_with_its_request_id(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(settings)

    async def broken() -> None:
        raise RuntimeError("the disk caught fire")

    app.add_api_route("/broken", broken)
    async with (
        app.router.lifespan_context(app),
        AsyncClient(transport=ASGITransport(app=app), base_url="http://p") as http,
    ):
        with caplog.at_level(logging.INFO):
            response = await http.get("/broken", headers=ADMIN)
    assert response.status_code == 500
    request_id = response.headers["x-openstack-request-id"]
    assert response.json()["errors"][0]["request_id"] == request_id
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1
    assert request_id in tracebacks[0].getMessage()
    assert "the disk caught fire" in str(tracebacks[0].exc_info[1])  # type: ignore[index]
    [access] = [r for r in caplog.records if r.name == "placement_api.access"]
    assert access.status == 500  # type: ignore[attr-defined]
