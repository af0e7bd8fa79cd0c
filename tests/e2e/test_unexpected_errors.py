"""A 500 from the served process: Placement's error body and headers, the
keep-alive connection still usable, the traceback logged once.

The failure is a real one: a table an operator dropped from the SQLite file
under the running server (not an outage, which would be a 503: a bug's 500).
"""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path

from tests.support.server import live_server

HEADERS = b"x-auth-token: admin\r\nopenstack-api-version: placement 1.39\r\n"


def _read_response(sock: socket.socket) -> tuple[bytes, dict[str, str], bytes]:
    """One response read off a kept-alive connection (it says its length)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    return status.encode(), headers, body


def test_a_500_is_a_placement_error_and_the_connection_stays_usable(tmp_path: Path) -> None:
    path = tmp_path / "placement.sqlite"
    with (
        live_server(f"sqlite+aiosqlite:///{path}") as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock,
    ):
        with sqlite3.connect(path) as broken:
            broken.execute("DROP TABLE traits")
        sock.sendall(b"GET /traits HTTP/1.1\r\nHost: x\r\n" + HEADERS + b"\r\n")
        status, headers, body = _read_response(sock)
        assert status.startswith(b"HTTP/1.1 500")
        error = json.loads(body)["errors"][0]
        assert error["status"] == 500
        assert error["detail"] == "An unexpected error occurred."
        assert error["request_id"] == headers["x-openstack-request-id"]
        assert headers["openstack-api-version"] == "placement 1.39"
        assert headers.get("connection", "keep-alive") != "close"
        # The same connection answers the next request.
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = _read_response(sock)
        assert status.startswith(b"HTTP/1.1 200")
        assert "versions" in json.loads(body)
        log = server.log_text()
    # One record (its traceback shows the exceptions chained within it);
    # uvicorn's own "Exception in ASGI application" would be a second.
    assert log.count("unexpected error handling GET /traits") == 1, log
    assert "Exception in ASGI application" not in log
    assert "no such table: traits" in log
