"""The dashboard's HTTP views: what a browser may ask, and the headers every answer carries.

The app is driven through ASGI without its lifespan, so nothing reads an API:
the snapshot stays the empty one a fresh dashboard starts with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient

from placement_api.dashboard.flavors import parse_flavors
from placement_api.dashboard.hosts import allowed_hosts, host_name
from placement_api.dashboard.live import LiveOptions, LiveSnapshot
from placement_api.dashboard.web import create_dashboard_app
from placement_client import PlacementClient


@pytest.fixture
async def dashboard() -> AsyncIterator[AsyncClient]:
    client = PlacementClient.with_token("http://127.0.0.1:9", "admin")
    live = LiveSnapshot(client, parse_flavors(["small=VCPU:1"]), LiveOptions())
    app = create_dashboard_app(live, allowed_hosts=allowed_hosts("127.0.0.1", ["dashboard"]))
    transport = ASGITransport(app=app)
    async with client, AsyncClient(transport=transport, base_url="http://dashboard") as http:
        yield http


async def test_the_page_forbids_inline_script_and_foreign_sources(dashboard: AsyncClient):
    page = await dashboard.get("/")
    assert page.status_code == 200
    assert '<script src="/static/dashboard.js"' in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert (await dashboard.get("/static/dashboard.js")).status_code == 200


async def test_the_page_says_it_is_loading_until_the_first_read(dashboard: AsyncClient):
    """No blank page: before its script has read anything the page shows a loading note."""
    page = (await dashboard.get("/")).text
    assert '<p id="loading" class="loading">Loading' in page
    assert '<main id="main" hidden>' in page


async def test_before_the_first_read_the_summary_says_so_and_shows_no_numbers(
    dashboard: AsyncClient,
):
    summary = (await dashboard.get("/api/summary")).json()
    assert summary["read_at"] is None
    assert summary["flavors"] == ["small"]
    assert "resource_classes" not in summary
    hosts = (await dashboard.get("/api/hosts")).json()
    assert (hosts["total"], hosts["hosts"], hosts["pages"]) == (0, [], 1)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("page=0", "page"),
        ("per_page=201", "per_page"),
        ("page=" + "9" * 5000, "page"),
        ("only=everything", "only"),
        ("order=random", "order"),
        ("sort=name", "sort"),
    ],
)
async def test_a_query_the_views_do_not_take_is_a_400_that_names_it(
    dashboard: AsyncClient, query: str, named: str
):
    answer = await dashboard.get(f"/api/hosts?{query}")
    assert answer.status_code == 400
    assert named in answer.json()["error"]


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8780", "dashboard.evil.example", "127.0.0.2", "", "a b"],
)
async def test_a_host_header_it_does_not_know_is_a_400_with_no_data(
    dashboard: AsyncClient, host: str
):
    """DNS rebinding: a name of someone else's that resolves to this address."""
    for path in ("/", "/api/summary", "/api/hosts", "/static/dashboard.js"):
        refused = await dashboard.get(path, headers={"host": host})
        assert refused.status_code == 400, (path, refused.text)
        assert "flavors" not in refused.text


@pytest.mark.parametrize("host", ["dashboard", "DASHBOARD:8780", "localhost:8780", "[::1]:8780"])
async def test_its_own_address_and_configured_names_are_answered(dashboard: AsyncClient, host: str):
    assert (await dashboard.get("/api/summary", headers={"host": host})).status_code == 200


def test_the_address_it_listens_on_is_allowed_unless_it_is_a_wildcard() -> None:
    assert "10.0.0.5" in allowed_hosts("10.0.0.5", [])
    assert allowed_hosts("0.0.0.0", [" Dash.Example "]) == {
        "localhost",
        "127.0.0.1",
        "::1",
        "dash.example",
    }
    assert (host_name("[::1]:80"), host_name("x:notaport"), host_name("u@x")) == ("::1", None, None)
