"""A real ``placement-api serve`` process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class LiveServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]


@contextmanager
def live_server(database_url: str, *, workers: int = 1, **env: str) -> Iterator[LiveServer]:
    port = free_port()
    environment = dict(os.environ, PLACEMENT_DATABASE_URL=database_url, **env)
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
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        yield LiveServer(url=url, port=port, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_up(url: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"server exited with {process.returncode}: {stderr[-2000:]}")
        try:
            if httpx.get(f"{url}/", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not answer within {timeout}s")
