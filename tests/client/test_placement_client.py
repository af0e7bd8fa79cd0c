"""The shared client against the real API: microversion negotiation, typed errors,
retries with bounded backoff, and one new token after a 401."""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any

import httpx
import pytest
from keystoneauth1 import adapter, plugin, session

from placement_client import (
    BadRequest,
    ConcurrentUpdate,
    Conflict,
    DuplicateName,
    InventoryInUse,
    MicroversionUnsupported,
    NotFound,
    PlacementClient,
    PlacementUnavailable,
    Unauthorized,
    Version,
)
from placement_client.auth import from_environment
from tests.client.conftest import FAST_RETRY, URL, MakeClient, Sent
from tests.support.server import free_port

INVENTORY = {"VCPU": {"total": 8}}


async def provider(client: PlacementClient, name: str | None = None) -> dict[str, Any]:
    body = {"uuid": str(uuid.uuid4()), "name": name or f"rp-{uuid.uuid4().hex[:8]}"}
    created: dict[str, Any] = await client.post("/resource_providers", body)
    return created


async def test_the_root_document_is_read_once_and_the_wanted_version_is_sent(
    make_client: MakeClient,
) -> None:
    sent = Sent()
    client = make_client(sent=sent)
    rp = await provider(client)
    await client.get(f"/resource_providers/{rp['uuid']}")
    await client.get("/resource_providers")
    assert sent.paths("GET").count("/") == 1
    assert client.microversion == Version(1, 39)
    versions = {r.headers.get("openstack-api-version") for r in sent.requests if r.url.path != "/"}
    assert versions == {"placement 1.39"}


async def test_an_older_version_is_spoken_when_the_client_wants_it(
    make_client: MakeClient,
) -> None:
    client = make_client(microversion="1.20")
    response = await client.request("GET", "/resource_providers")
    assert client.microversion == Version(1, 20)
    assert response.headers["openstack-api-version"] == "placement 1.20"


async def test_one_request_may_ask_for_an_older_version_never_a_newer_one(
    make_client: MakeClient,
) -> None:
    client = make_client(microversion="1.30")
    older = await client.request("GET", "/resource_providers", microversion=Version(1, 14))
    capped = await client.request("GET", "/resource_providers", microversion=Version(1, 39))
    assert older.headers["openstack-api-version"] == "placement 1.14"
    assert capped.headers["openstack-api-version"] == "placement 1.30"


async def test_a_server_older_than_the_client_needs_is_refused_before_any_request(
    make_client: MakeClient,
) -> None:
    sent = Sent()
    client = make_client(microversion="1.45", minimum_microversion="1.40", sent=sent)
    with pytest.raises(MicroversionUnsupported, match=r"speaks 1\.0 to 1\.39.*needs 1\.40"):
        await client.get("/resource_providers")
    assert sent.paths() == ["/"]


async def test_a_missing_provider_is_not_found(make_client: MakeClient) -> None:
    with pytest.raises(NotFound) as raised:
        await make_client().get(f"/resource_providers/{uuid.uuid4()}")
    assert raised.value.status == 404


async def test_a_malformed_body_is_a_bad_request_that_creates_nothing(
    make_client: MakeClient,
) -> None:
    client = make_client()
    with pytest.raises(BadRequest) as raised:
        await client.post("/resource_providers", {"name": "x", "unexpected": 1})
    assert raised.value.status == 400
    assert (await client.get("/resource_providers"))["resource_providers"] == []


async def test_a_taken_name_is_a_duplicate_name_conflict(make_client: MakeClient) -> None:
    client = make_client()
    first = await provider(client)
    with pytest.raises(DuplicateName) as raised:
        await provider(client, first["name"])
    assert raised.value.code == "placement.duplicate_name"
    listed = (await client.get("/resource_providers"))["resource_providers"]
    assert [rp["uuid"] for rp in listed] == [first["uuid"]]


async def test_a_stale_generation_is_a_concurrent_update_that_changes_nothing(
    make_client: MakeClient,
) -> None:
    client = make_client()
    rp = await provider(client)
    path = f"/resource_providers/{rp['uuid']}/inventories"
    await client.put(path, {"resource_provider_generation": 0, "inventories": INVENTORY})
    stale = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 2}}}
    with pytest.raises(ConcurrentUpdate) as raised:
        await client.put(path, stale)
    assert isinstance(raised.value, Conflict)
    assert raised.value.code == "placement.concurrent_update"
    after = await client.get(path)
    assert after["inventories"]["VCPU"]["total"] == 8
    assert after["resource_provider_generation"] == 1


async def test_removing_a_class_in_use_is_inventory_in_use(make_client: MakeClient) -> None:
    client = make_client()
    rp = await provider(client)
    path = f"/resource_providers/{rp['uuid']}/inventories"
    await client.put(path, {"resource_provider_generation": 0, "inventories": INVENTORY})
    consumer = str(uuid.uuid4())
    await client.put(
        f"/allocations/{consumer}",
        {
            "allocations": {rp["uuid"]: {"resources": {"VCPU": 2}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        },
    )
    generation = (await client.get(path))["resource_provider_generation"]
    with pytest.raises(InventoryInUse):
        await client.put(path, {"resource_provider_generation": generation, "inventories": {}})
    assert (await client.get(path))["inventories"]["VCPU"]["total"] == 8


async def test_without_a_token_the_401_is_raised_after_one_attempt(
    make_client: MakeClient,
) -> None:
    sent = Sent()
    client = make_client(None, sent=sent)
    with pytest.raises(Unauthorized):
        await client.get("/resource_providers")
    assert sent.paths() == ["/", "/resource_providers"]


class RenewedToken(plugin.BaseAuthPlugin):
    """A keystoneauth1 plugin whose first token the server refuses (none at all, for
    noauth2) and whose token after ``invalidate`` it accepts."""

    def __init__(self, renewed: str | None = "admin") -> None:
        super().__init__()
        self.renewed = renewed
        self.invalidated = 0

    def get_token(self, session: session.Session) -> str | None:
        return self.renewed if self.invalidated else None

    def invalidate(self) -> bool:
        self.invalidated += 1
        return True


def renewing_client(auth: RenewedToken, placement_app: Any, sent: Sent) -> PlacementClient:
    ks_adapter = adapter.Adapter(session.Session(auth=auth), endpoint_override=URL)
    return PlacementClient(
        ks_adapter,
        transport=httpx.ASGITransport(app=placement_app),
        event_hooks={"request": [sent]},
        retry=FAST_RETRY,
    )


async def test_a_401_renews_the_token_and_sends_the_request_once_more(placement_app) -> None:
    auth, sent = RenewedToken(), Sent()
    async with renewing_client(auth, placement_app, sent) as client:
        assert (await client.get("/resource_providers"))["resource_providers"] == []
        await client.get("/resource_providers")
    assert auth.invalidated == 1
    assert sent.paths() == ["/", *["/resource_providers"] * 3]
    assert [r.headers.get("x-auth-token") for r in sent.requests[1:]] == [None, "admin", "admin"]


async def test_requests_refused_together_renew_the_token_once(placement_app) -> None:
    auth, sent = RenewedToken(), Sent()
    async with renewing_client(auth, placement_app, sent) as client:
        await client.get("/")  # the version document is read before the race
        answers = await asyncio.gather(*(client.get("/resource_providers") for _ in range(5)))
    assert answers == [{"resource_providers": []}] * 5
    assert auth.invalidated == 1


async def test_a_token_refused_twice_is_unauthorized_without_a_third_try(placement_app) -> None:
    auth, sent = RenewedToken(renewed=None), Sent()
    async with renewing_client(auth, placement_app, sent) as client:
        with pytest.raises(Unauthorized):
            await client.get("/resource_providers")
    assert auth.invalidated == 1
    assert sent.paths() == ["/", "/resource_providers", "/resource_providers"]


def unavailable_first(app: Any, failures: int) -> Any:
    """A proxy in front of the app that answers 503 to the first ``failures`` requests."""
    answered = {"count": 0}

    async def proxy(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and answered["count"] < failures:
            answered["count"] += 1
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"busy"})
            return
        await app(scope, receive, send)

    return proxy


class Waits:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def assert_backoff_with_jitter(delays: list[float]) -> None:
    for retry, delay in enumerate(delays):
        ceiling = FAST_RETRY.delay_ceiling(retry)
        assert ceiling / 2 <= delay <= ceiling


async def test_503s_are_retried_with_backoff_until_an_answer(
    make_client: MakeClient, placement_app
) -> None:
    waits, sent = Waits(), Sent()
    client = make_client(app=unavailable_first(placement_app, 3), sent=sent, sleep=waits)
    assert (await client.get("/resource_providers"))["resource_providers"] == []
    assert len(waits.delays) == 3
    assert_backoff_with_jitter(waits.delays)
    assert sent.paths() == ["/"] * 4 + ["/resource_providers"]


async def test_503s_beyond_the_attempts_are_unavailable(
    make_client: MakeClient, placement_app
) -> None:
    waits, sent = Waits(), Sent()
    client = make_client(app=unavailable_first(placement_app, 100), sent=sent, sleep=waits)
    with pytest.raises(PlacementUnavailable) as raised:
        await client.get("/resource_providers")
    assert raised.value.status == 503
    assert len(sent.requests) == FAST_RETRY.attempts
    assert len(waits.delays) == FAST_RETRY.attempts - 1


async def test_a_refused_connection_is_retried_within_the_attempts() -> None:
    waits, sent = Waits(), Sent()
    url = f"http://127.0.0.1:{free_port()}"
    client = PlacementClient.with_token(
        url, "admin", retry=FAST_RETRY, sleep=waits, event_hooks={"request": [sent]}
    )
    async with client:
        with pytest.raises(PlacementUnavailable, match="ConnectError") as raised:
            await client.get("/resource_providers")
    assert raised.value.status is None
    assert f"cannot reach Placement at {url}/" in str(raised.value)
    assert len(sent.requests) == FAST_RETRY.attempts
    assert_backoff_with_jitter(waits.delays)


async def test_ping_answers_false_at_once_when_nothing_listens() -> None:
    waits = Waits()
    url = f"http://127.0.0.1:{free_port()}"
    async with PlacementClient.with_token(url, "admin", sleep=waits) as client:
        assert await client.ping() is False
    assert waits.delays == []


@pytest.mark.parametrize("listening", [True, False], ids=["silent", "refusing"])
async def test_a_keystone_that_cannot_be_reached_makes_placement_unavailable(
    listening: bool,
) -> None:
    with socket.socket() as keystone:
        keystone.bind(("127.0.0.1", 0))
        if listening:
            keystone.listen()  # connections are queued, never answered
        variables = {
            "OS_AUTH_URL": f"http://127.0.0.1:{keystone.getsockname()[1]}/v3",
            "OS_USERNAME": "placement-agent",
            "OS_PASSWORD": "secret",
            "OS_USER_DOMAIN_NAME": "Default",
            "OS_PROJECT_NAME": "service",
            "OS_PROJECT_DOMAIN_NAME": "Default",
        }
        async with PlacementClient(from_environment(variables), timeout=0.5) as client:
            with pytest.raises(PlacementUnavailable, match="cannot find the Placement endpoint"):
                await client.get("/resource_providers")
