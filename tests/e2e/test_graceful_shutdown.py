"""SIGTERM with a write under way: it finishes when it can within the drain
time, and is cancelled with nothing written when it cannot."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.server import LiveServer, live_server, provider_with_vcpus

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}
DRAIN = 2
# uvicorn re-raises the signal once it has shut down cleanly.
EXITED_ON_SIGTERM = (0, -signal.SIGTERM)


@contextmanager
def _write_lock_held(database: Path) -> Iterator[sqlite3.Connection]:
    """Another process's write transaction, which the server's writes wait for."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield holder
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


def _claim_in_background(
    server: LiveServer, provider: str
) -> tuple[threading.Thread, list[object]]:
    """PUT one allocation from a thread; its response (or error) lands in the list."""
    outcome: list[object] = []

    def claim() -> None:
        try:
            response = httpx.put(
                f"{server.url}/allocations/{uuid.uuid4()}",
                json={
                    "allocations": {provider: {"resources": {"VCPU": 1}}},
                    "project_id": "project",
                    "user_id": "user",
                    "consumer_generation": None,
                },
                headers=HEADERS,
                timeout=30,
            )
            outcome.append(response.status_code)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=claim)
    thread.start()
    return thread, outcome


def _allocation_rows(database: Path) -> tuple[int, int]:
    """Allocation rows and the VCPU usage recorded, read from the file itself."""
    with sqlite3.connect(database) as connection:
        ((rows,),) = connection.execute("SELECT count(*) FROM allocations").fetchall()
        ((used,),) = connection.execute("SELECT coalesce(sum(used), 0) FROM inventories")
    return rows, used


def test_a_write_under_way_at_sigterm_finishes_within_the_drain_time(tmp_path: Path) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(
        f"sqlite+aiosqlite:///{database}",
        PLACEMENT_GRACEFUL_SHUTDOWN_TIMEOUT=str(DRAIN),
        PLACEMENT_DATABASE_LOCK_TIMEOUT="20",
    ) as server:
        provider = provider_with_vcpus(server)
        with _write_lock_held(database) as holder:
            thread, outcome = _claim_in_background(server, provider)
            time.sleep(0.5)
            server.process.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            holder.execute("ROLLBACK")
            thread.join(timeout=30)
        assert server.process.wait(timeout=30) in EXITED_ON_SIGTERM
    assert outcome == [204]
    assert _allocation_rows(database) == (1, 1)


def test_a_write_still_waiting_when_the_drain_time_ends_is_cancelled_with_nothing_written(
    tmp_path: Path,
) -> None:
    database = tmp_path / "placement.sqlite"
    with live_server(
        f"sqlite+aiosqlite:///{database}",
        PLACEMENT_GRACEFUL_SHUTDOWN_TIMEOUT=str(DRAIN),
        PLACEMENT_DATABASE_LOCK_TIMEOUT="20",
    ) as server:
        provider = provider_with_vcpus(server)
        with _write_lock_held(database):
            thread, outcome = _claim_in_background(server, provider)
            time.sleep(0.5)
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=30) in EXITED_ON_SIGTERM
            stopped = time.monotonic() - started
            thread.join(timeout=30)
    assert DRAIN <= stopped < DRAIN + 5
    assert len(outcome) == 1
    assert isinstance(outcome[0], httpx.HTTPError)
    assert _allocation_rows(database) == (0, 0)
