"""A real ``placement-api serve`` process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

import httpx


def _below_ephemeral_ports() -> range:
    """12,000 ports below Linux's ephemeral range (32768-60999 unless set),
    where the kernel picks the local port of every outgoing connection and
    of every bind to port 0."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as settings:
        first_ephemeral = int(settings.read().split()[0])
    return range(max(1024, first_ephemeral - 12_000), first_ephemeral)


class _PortAllocator:
    """Ports for the servers a test starts, each pytest-xdist worker from its own
    slice, in turn. A port the kernel hands out (bind to port 0) is free only
    until the probe closes: another worker could be handed the same one before
    a server binds it, and a test then talks to the other worker's server."""

    def __init__(self) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        ports = _below_ephemeral_ports()
        size = len(ports) // max(workers, 1)
        start = ports.start + int(worker) * size
        self._ports = range(start, start + size)
        self._next = 0

    def take(self) -> int:
        """The next port of this worker's slice that nothing holds (a port in
        TIME_WAIT is passed over, as a listener without SO_REUSEADDR would fail)."""
        for _ in self._ports:
            port = self._ports[self._next % len(self._ports)]
            self._next += 1
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
        raise RuntimeError(f"every port of {self._ports} is taken")


_ALLOCATOR = _PortAllocator()


def free_port() -> int:
    """A loopback port no other test worker will be given."""
    return _ALLOCATOR.take()


@dataclass(frozen=True)
class LiveServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    def log_text(self) -> str:
        """What the server logged so far (read without moving the file's
        offset, which the server's writes share)."""
        descriptor = self.log.fileno()
        return os.pread(descriptor, os.fstat(descriptor).st_size, 0).decode(errors="replace")


@contextmanager
def live_server(database_url: str, *, workers: int = 1, **env: str) -> Iterator[LiveServer]:
    port = free_port()
    environment = dict(os.environ, PLACEMENT_DATABASE_URL=database_url, **env)
    # A file, not a pipe: a server that logs more than a pipe holds would
    # block on its next line when nobody reads it.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server, closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement_api",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--workers",
            str(workers),
        ],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield LiveServer(url=url, port=port, process=process, log=log)
    finally:
        stop(process)
        log.close()


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 seconds."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_for_answer(
    url: str, process: subprocess.Popen[bytes], output: Callable[[], str], timeout: float
) -> None:
    """Until ``GET /`` answers 200; a server that exits first fails with the end of ``output``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {output()[-2000:]}")
        try:
            if httpx.get(f"{url}/", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not answer within {timeout}s")


def _wait_until_up(
    url: str, process: subprocess.Popen[bytes], log: IO[bytes], timeout: float = 60
) -> None:
    def logged() -> str:
        return os.pread(log.fileno(), os.fstat(log.fileno()).st_size, 0).decode(errors="replace")

    _wait_for_answer(url, process, logged, timeout)


def wait_until_up(url: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """For a server a test starts itself, its stderr a pipe the test reads after."""

    def piped() -> str:
        return process.stderr.read().decode() if process.stderr else ""

    _wait_for_answer(url, process, piped, timeout)


ADMIN_HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}


def provider_with_vcpus(server: LiveServer, total: int = 100) -> str:
    """A new provider of ``server`` with ``total`` VCPU; returns its uuid."""
    with httpx.Client(base_url=server.url, headers=ADMIN_HEADERS) as client:
        created = client.post("/resource_providers", json={"name": f"rp-{uuid.uuid4().hex[:8]}"})
        provider: str = created.json()["uuid"]
        inventory = client.put(
            f"/resource_providers/{provider}/inventories",
            json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": total}}},
        )
        assert inventory.status_code == 200, inventory.text
    return provider
