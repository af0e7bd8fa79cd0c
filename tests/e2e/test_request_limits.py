"""Limits on what a client may send, against the served process over raw
sockets: slow headers and bodies are cut off, large headers, bodies and
query strings refused, each with a Placement error and a closed connection,
and nothing written."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import LiveServer, live_server

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
LIMITS: dict[str, Any] = {
    "PLACEMENT_HEADER_READ_TIMEOUT": "1",
    "PLACEMENT_BODY_READ_TIMEOUT": "1",
    "PLACEMENT_KEEP_ALIVE_TIMEOUT": "1",
    "PLACEMENT_MAX_BODY_BYTES": "65536",
    "PLACEMENT_MAX_HEADER_BYTES": "8192",
    "PLACEMENT_MAX_QUERY_LENGTH": "2048",
    "PLACEMENT_MAX_CONSUMERS_PER_WRITE": "10",
    "PLACEMENT_MAX_PROVIDERS_PER_WRITE": "5",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    database = tmp_path_factory.mktemp("limits") / "placement.sqlite"
    with live_server(f"sqlite+aiosqlite:///{database}", **LIMITS) as running:
        yield running


def _connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and when it closed (a
    reset, where it closed with what we sent unread, ends it too)."""
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks), time.monotonic()


def _send_until_refused(sock: socket.socket, pieces: Iterator[bytes]) -> int:
    """Send ``pieces`` until the server closes the connection; bytes sent."""
    sent = 0
    for piece in pieces:
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
    return sent


def _error(raw: bytes, status: int) -> dict[str, Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status}".encode()), raw[:300]
    assert b"connection: close" in head.lower()
    error: dict[str, Any] = json.loads(body)["errors"][0]
    assert error["status"] == status
    assert error["request_id"].startswith("req-")
    return error


def _provider_count(server: LiveServer) -> int:
    listing = httpx.get(f"{server.url}/resource_providers", headers=HEADERS)
    return len(listing.json()["resource_providers"])


def test_a_connection_that_sends_nothing_is_closed(server: LiveServer) -> None:
    with _connect(server) as sock:
        started = time.monotonic()
        raw, closed = _read_until_closed(sock)
    assert raw == b""
    assert 0.5 < closed - started < 5


def test_half_sent_headers_get_a_408_and_the_connection_closed(server: LiveServer) -> None:
    with _connect(server) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-")
        raw, closed = _read_until_closed(sock)
    assert "headers did not arrive" in _error(raw, 408)["detail"]
    assert 0.5 < closed - started < 5


def test_a_body_shorter_than_its_content_length_gets_a_408_and_writes_nothing(
    server: LiveServer,
) -> None:
    before = _provider_count(server)
    body = json.dumps({"name": f"slow-{uuid.uuid4().hex[:8]}"}).encode()
    with _connect(server) as sock:
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
            b"content-type: application/json\r\n"
            + f"content-length: {len(body) + 10}\r\n\r\n".encode()
            + body
        )
        raw, _ = _read_until_closed(sock)
    assert "body did not arrive" in _error(raw, 408)["detail"]
    assert _provider_count(server) == before


def test_an_idle_keep_alive_connection_is_closed(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        started = time.monotonic()
        raw, closed = _read_until_closed(sock)
    assert raw.startswith(b"HTTP/1.1 200")
    assert closed - started < 5


def test_headers_past_the_limit_get_a_431(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nx-padding: " + b"a" * 9000 + b"\r\n\r\n")
        raw, _ = _read_until_closed(sock)
    assert "8192 bytes" in _error(raw, 431)["detail"]


def test_headers_that_never_end_are_refused_before_they_are_all_sent(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        header = b"x-padding: " + b"a" * 1000 + b"\r\n"
        sent = _send_until_refused(sock, (header for _ in range(100_000)))
        raw, _ = _read_until_closed(sock)
    assert sent < 10_000_000
    assert raw == b"" or _error(raw, 431)


def test_a_query_string_past_the_limit_gets_a_414(server: LiveServer) -> None:
    response = httpx.get(f"{server.url}/resource_providers?name={'a' * 3000}", headers=HEADERS)
    assert response.status_code == 414
    assert "3005 bytes" in response.json()["errors"][0]["detail"]


def test_a_declared_body_past_the_limit_is_refused_before_it_is_sent(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(
            b"POST /allocations HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
            b"openstack-api-version: placement latest\r\n"
            b"content-type: application/json\r\ncontent-length: 50000000\r\n\r\n"
        )
        raw, _ = _read_until_closed(sock)
    assert "65536 bytes" in _error(raw, 413)["detail"]


def test_a_chunked_body_past_the_limit_gets_a_413_without_being_read_whole(
    server: LiveServer,
) -> None:
    before = _provider_count(server)
    chunk = b"a" * 16384
    with _connect(server) as sock:
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
            b"content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        # 50 MB offered; the server stops reading and closes long before.
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        sent = _send_until_refused(sock, (framed for _ in range(3200)))
        raw, _ = _read_until_closed(sock)
    assert sent < 10_000_000
    assert raw == b"" or "65536 bytes" in _error(raw, 413)["detail"]
    assert _provider_count(server) == before


def test_too_many_consumers_in_one_write_get_a_413(server: LiveServer) -> None:
    consumers: dict[str, Any] = {
        str(uuid.uuid4()): {
            "allocations": {},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
        }
        for _ in range(11)
    }
    response = httpx.post(f"{server.url}/allocations", json=consumers, headers=HEADERS)
    assert response.status_code == 413, response.text
    assert "11 consumers" in response.json()["errors"][0]["detail"]


def test_too_many_providers_in_one_consumers_allocations_get_a_413(server: LiveServer) -> None:
    allocations = {str(uuid.uuid4()): {"resources": {"VCPU": 1}} for _ in range(6)}
    response = httpx.put(
        f"{server.url}/allocations/{uuid.uuid4()}",
        json={
            "allocations": allocations,
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
        },
        headers=HEADERS,
    )
    assert response.status_code == 413, response.text
    assert "6 resource providers" in response.json()["errors"][0]["detail"]


def _one_response(sock: socket.socket) -> bytes:
    """One whole response (with a Content-Length) read off the connection."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += sock.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    length = int(next(
        line.split(b":", 1)[1] for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    ))  # fmt: skip
    while len(body) < length:
        body += sock.recv(65536)
    assert len(body) == length, raw[:300]
    return head + b"\r\n\r\n" + body


def _nothing_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server sends nothing (no stray answer) for ``seconds``."""
    sock.settimeout(seconds)
    try:
        stray = sock.recv(65536)
    except TimeoutError:
        return True
    finally:
        sock.settimeout(10)
    raise AssertionError(f"an answer nobody asked for: {stray[:100]!r}")


def test_a_body_left_unread_by_an_early_answer_is_drained_and_the_connection_kept(
    server: LiveServer,
) -> None:
    """A 401 goes out before the body is read; the rest of the body (more
    than the header limit) was once taken for headers: a stray 431."""
    body = b"x" * 60_000
    with _connect(server) as sock:
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
        )
        assert _one_response(sock).startswith(b"HTTP/1.1 401")
        sock.sendall(body)
        assert _nothing_within(sock, 0.5)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _one_response(sock).startswith(b"HTTP/1.1 200")


def test_an_unbounded_body_after_an_early_answer_ends_in_a_close_not_a_reset(
    server: LiveServer,
) -> None:
    with _connect(server) as sock:
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        assert _one_response(sock).startswith(b"HTTP/1.1 401")
        chunk = b"%x\r\n%s\r\n" % (16384, b"x" * 16384)
        sent = _send_until_refused(sock, iter([chunk] * 12))  # past the drain bound
        assert sent == 12 * len(chunk)
        raw, _ = _read_until_closed(sock)
    assert raw == b""  # an end, neither a second answer nor a reset
