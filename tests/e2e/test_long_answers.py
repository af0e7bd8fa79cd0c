"""Long answers of a served process: a change feed stream ends with a whole
response before the request deadline would cut it, logging no error; a
client that stops reading is dropped once its answer stalls."""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path

import httpx

from tests.support.server import live_server

HEADERS = {
    "x-auth-token": "admin",
    "openstack-api-version": "placement latest",
    "accept": "text/event-stream",
}


def test_a_stream_as_long_as_the_request_deadline_ends_whole_and_quietly(
    tmp_path: Path,
) -> None:
    """With changes_max_wait at the request timeout, the deadline used to
    cut each stream: a broken chunked body and an ERROR per stream."""
    database = f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}"
    with live_server(
        database, PLACEMENT_REQUEST_TIMEOUT="3", PLACEMENT_CHANGES_MAX_WAIT="3"
    ) as server:
        started = time.monotonic()
        with httpx.stream("GET", f"{server.url}/changes", headers=HEADERS, timeout=20) as stream:
            assert stream.status_code == 200
            body = b"".join(stream.iter_bytes())  # a cut-off chunked body raises here
        took = time.monotonic() - started
        log = server.log_text()
    assert body.startswith(b"retry: 1000")
    assert 1.5 < took < 3.0, took
    assert "ERROR" not in log, log[-2000:]


def test_a_client_that_stops_reading_is_dropped_after_the_stall_timeout(tmp_path: Path) -> None:
    """2,000 pipelined requests (about 19 MB of answers) whose answers the
    client does not read: once the server's write buffer is full and stays
    so for send_stall_timeout, the connection is dropped instead of held
    (with its answers buffered) for as long as the client likes."""
    database = f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}"
    requests = 2_000
    with live_server(database, PLACEMENT_SEND_STALL_TIMEOUT="1") as server:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        with sock:
            request = (
                b"GET /traits HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
                b"openstack-api-version: placement latest\r\n\r\n"
            )
            sock.sendall(request * requests)
            time.sleep(5)  # the write buffer fills, then the stall timeout passes
            sock.settimeout(10)
            received = b""
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(65536):
                    received += chunk
    assert 0 < received.count(b"HTTP/1.1 200") < requests
