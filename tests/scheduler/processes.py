"""``placement-scheduler serve`` as a real process, for tests that need several."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.support.server import free_port, stop


class SchedulerProcess:
    def __init__(self, api_url: str, **env: str) -> None:
        self.api_url = api_url
        self.env = dict(os.environ, PLACEMENT_SCHEDULER_PROVIDER_CACHE_SECONDS="0", **env)
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()

    def start(self) -> None:
        port = free_port()
        command = [sys.executable, "-m", "scheduler", "serve", "--api-url", self.api_url]
        command += ["--port", str(port), "--log-level", "warning"]
        self._process = subprocess.Popen(
            command, env=self.env, stdout=subprocess.DEVNULL, stderr=self._log
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._log.seek(0)
                raise AssertionError(f"scheduler exited: {self._log.read().decode()}")
            try:
                if httpx.get(f"{self.url}/v1/filters", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError("scheduler did not start")

    def stop(self) -> None:
        if self._process is not None:
            stop(self._process)
            self._process = None

    def restart(self) -> None:
        """A new process, knowing nothing of what the last one decided."""
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        self._log.close()


@contextmanager
def schedulers(api_url: str, count: int, **env: str) -> Iterator[list[SchedulerProcess]]:
    started = [SchedulerProcess(api_url, **env) for _ in range(count)]
    try:
        for process in started:
            process.start()
        yield started
    finally:
        for process in started:
            process.close()
