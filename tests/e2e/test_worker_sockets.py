"""With several workers, each listens on a socket of its own (SO_REUSEPORT)
and the kernel spreads connections between them; with one shared socket,
a burst of connections could all go to whichever worker woke first.

Sockets are read from /proc (Linux, where SO_REUSEPORT spreads connections)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.server import LiveServer, live_server

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads sockets from /proc"
)

LISTEN, ESTABLISHED = "0A", "01"


def _socket_owners(root: int) -> dict[str, set[int]]:
    """Socket inode -> the pids holding it, among ``root`` and its children."""
    owners: dict[str, set[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if int(entry.name) != root and parent != root:
                continue
            links = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue
        for link in links:
            if link.startswith("socket:["):
                owners.setdefault(link[8:-1], set()).add(int(entry.name))
    return owners


def _server_sockets(server: LiveServer, state: str) -> list[frozenset[int]]:
    """The server's sockets on its port in ``state``: the pids holding each."""
    owners = _socket_owners(server.process.pid)
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        port = int(fields[1].rsplit(":", 1)[1], 16)
        if port == server.port and fields[3] == state and fields[9] in owners:
            found.append(frozenset(owners[fields[9]]))
    return found


def _listeners(server: LiveServer, holders: int) -> list[frozenset[int]]:
    """The listening sockets, once ``holders`` processes hold one (a worker
    listens once started; the first to start answers the first request)."""
    deadline = time.monotonic() + 60
    while sum(map(len, found := _server_sockets(server, LISTEN))) < holders:
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return found


def _connections(port: int, count: int) -> Iterator[socket.socket]:
    """``count`` kept-alive connections, each having had an answer."""
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=30)
        connection.sendall(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n")
        assert connection.recv(65536).startswith(b"HTTP/1.1 200")
        yield connection


def test_each_worker_listens_on_its_own_socket_and_gets_connections(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}"
    with live_server(database, workers=2) as server, ExitStack() as stack:
        listeners = _listeners(server, 2)
        # Two sockets, each in one worker (the parent's own never listens).
        assert [len(holders) for holders in listeners] == [1, 1], listeners
        workers = set().union(*listeners)
        assert len(workers) == 2
        for connection in _connections(server.port, 40):
            stack.callback(connection.close)
        # Spread by a hash of each connection's address: 40 all on one of
        # two workers would be a 1 in 2**39 chance.
        per_worker = Counter(
            pid for holders in _server_sockets(server, ESTABLISHED) for pid in holders
        )
        assert set(per_worker) == workers, f"connections per worker: {dict(per_worker)}"


def test_workers_share_one_socket_when_reuse_port_is_off(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}"
    with live_server(database, workers=2, PLACEMENT_WORKER_REUSE_PORT="false") as server:
        # One listening socket, held by the parent and both workers.
        listeners = _listeners(server, 3)
        assert [len(holders) for holders in listeners] == [3], listeners


def test_a_busy_port_stops_serve_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "placement_api", "serve", "--port", str(port), "--workers", "2"],
            env=dict(
                os.environ,
                PLACEMENT_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}",
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def _workers(server: LiveServer) -> list[int]:
    """The worker pids, in the supervisor's order (the order they started)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # After the name: state, parent, ...; field 22 (index 19) is the start time.
        if int(stat[1]) == server.process.pid and b"spawn_main" in cmdline:
            children.append((int(stat[19]), int(entry.name)))
    return [pid for _, pid in sorted(children)]


def test_a_dead_worker_is_replaced_while_another_does_not_answer(tmp_path: Path) -> None:
    """uvicorn's supervisor waited for the frozen worker's health check
    (30 s) before it looked at the dead one."""
    database = f"sqlite+aiosqlite:///{tmp_path / 'placement.sqlite'}"
    with live_server(database, workers=2) as server:
        _listeners(server, 2)
        frozen, killed = _workers(server)
        os.kill(frozen, signal.SIGSTOP)
        try:
            os.kill(killed, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while len(set(_workers(server)) - {frozen, killed}) < 1:
                assert time.monotonic() < deadline, "the dead worker was not replaced within 5 s"
                time.sleep(0.1)
        finally:
            os.kill(frozen, signal.SIGCONT)
