"""The served process: migrations on start, protocol-level errors in Placement format."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import LiveServer, live_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    database = tmp_path_factory.mktemp("served") / "var" / "placement.sqlite"
    with live_server(f"sqlite+aiosqlite:///{database}") as running:
        yield running


def test_serve_migrates_a_new_sqlite_database_and_answers(server: LiveServer) -> None:
    response = httpx.get(
        f"{server.url}/resource_providers",
        headers={"x-auth-token": "admin", "openstack-api-version": "placement latest"},
    )
    assert response.status_code == 200
    assert response.json() == {"resource_providers": []}
    assert response.headers["openstack-api-version"] == "placement 1.39"


def _raw_request(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_unparseable_content_length_gets_a_placement_error(server: LiveServer) -> None:
    raw = _raw_request(
        server.port,
        b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
        b"content-type: application/json\r\ncontent-length: hi mom\r\n\r\n{}",
    )
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    error = json.loads(body)["errors"][0]
    assert error["detail"] == "content-length header must be an integer"
    assert error["request_id"].startswith("req-")


def test_request_id_is_echoed_only_when_well_formed(server: LiveServer) -> None:
    incoming = "req-12345678-1234-1234-1234-123456789abc"
    response = httpx.get(f"{server.url}/", headers={"x-openstack-request-id": incoming})
    assert response.headers["x-openstack-request-id"] == incoming
    replaced = httpx.get(f"{server.url}/", headers={"x-openstack-request-id": "not-an-id"})
    assert replaced.headers["x-openstack-request-id"].startswith("req-")
    assert replaced.headers["x-openstack-request-id"] != "not-an-id"


def test_serve_with_several_workers_writes_and_reads_one_database(tmp_path: Path) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(f"sqlite+aiosqlite:///{database}", workers=2) as running:
        headers = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
        for index in range(6):
            created = httpx.post(
                f"{running.url}/resource_providers", json={"name": f"rp-{index}"}, headers=headers
            )
            assert created.status_code == 200, created.text
        listing = httpx.get(f"{running.url}/resource_providers", headers=headers)
        assert len(listing.json()["resource_providers"]) == 6
