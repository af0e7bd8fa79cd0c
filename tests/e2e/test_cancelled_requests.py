"""A request past its deadline, or whose client went away, is cancelled and
its write rolled back: it is not carried out later for no one.

Each write is held up by another process holding SQLite's write lock, then
let through after the deadline or the disconnect; nothing may be written."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
import uuid
from pathlib import Path

import httpx

from tests.support.server import live_server, provider_with_vcpus

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}


def _claim(provider: str) -> dict[str, object]:
    return {
        "allocations": {provider: {"resources": {"VCPU": 1}}},
        "project_id": "project",
        "user_id": "user",
        "consumer_generation": None,
    }


def _written(database: Path) -> tuple[int, int]:
    with sqlite3.connect(database) as connection:
        ((rows,),) = connection.execute("SELECT count(*) FROM allocations").fetchall()
        ((used,),) = connection.execute("SELECT coalesce(sum(used), 0) FROM inventories")
    return rows, used


def test_a_request_past_its_deadline_gets_a_503_and_writes_nothing(tmp_path: Path) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(
        f"sqlite+aiosqlite:///{database}",
        PLACEMENT_REQUEST_TIMEOUT="1",
        PLACEMENT_DATABASE_LOCK_TIMEOUT="20",
    ) as server:
        provider = provider_with_vcpus(server)
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        response = httpx.put(
            f"{server.url}/allocations/{uuid.uuid4()}",
            json=_claim(provider),
            headers=HEADERS,
            timeout=30,
        )
        took = time.monotonic() - started
        holder.execute("ROLLBACK")
        holder.close()
        time.sleep(1.0)
        written = _written(database)
    assert response.status_code == 503, response.text
    assert "within 1s" in response.json()["errors"][0]["detail"]
    assert response.headers["retry-after"] == "2"
    assert took < 3
    assert written == (0, 0)


def test_a_write_whose_client_went_away_is_cancelled_and_writes_nothing(tmp_path: Path) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(
        f"sqlite+aiosqlite:///{database}", PLACEMENT_DATABASE_LOCK_TIMEOUT="20"
    ) as server:
        provider = provider_with_vcpus(server)
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        body = json.dumps(_claim(provider)).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(
                f"PUT /allocations/{uuid.uuid4()} HTTP/1.1\r\nHost: x\r\n"
                "x-auth-token: admin\r\nopenstack-api-version: placement 1.28\r\n"
                f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            time.sleep(0.5)
        # The client is gone; the write lock is free again a moment later.
        time.sleep(0.5)
        holder.execute("ROLLBACK")
        holder.close()
        time.sleep(1.5)
        written = _written(database)
        still_serving = httpx.get(f"{server.url}/", timeout=5).status_code
    assert written == (0, 0)
    assert still_serving == 200
