"""Change feed streams of a served process as their deadlines pass: a stream
ends with a whole response before the request deadline would cut it, and
nothing is logged as an error."""

from __future__ import annotations

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
