"""uvicorn's worker supervisor, with a dead worker replaced at once.

uvicorn's checks its workers one after the other every half second, each by
a health-check ping it waits up to ``timeout_worker_healthcheck`` for: while
one worker is slow to answer (its interpreter lock held by a long encode, or
swapping), a worker that died beside it waits that long to be replaced (31 s
was seen). Here each check first replaces every worker whose process is gone,
then pings the living ones with a short wait each; one is killed and replaced
once it has not answered for ``timeout_worker_healthcheck`` in a row.
"""

from __future__ import annotations

import time
from socket import socket

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process, logger

# How long one check waits for one worker's answer; unanswered pings add up.
PING_WAIT = 0.2


class Supervisor(Multiprocess):
    def __init__(self, config: Config, sockets: list[socket]) -> None:
        super().__init__(config, sockets)
        # Per worker (by its Process's id): since when its pings go unanswered.
        self._silent_since: dict[int, float] = {}

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for index, process in enumerate(self.processes):
            if self._alive(process):
                continue
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                # Broken before serving (the app, the socket): every restart would be too.
                logger.error("Child process [%s] failed to start, stopping.", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            logger.info("Child process [%s] died", process.pid)
            replacement = Process(self.config, self.sockets)
            replacement.start()
            self.processes[index] = replacement

    def _alive(self, process: Process) -> bool:
        """Running, and answering (or silent for less than the health-check timeout)."""
        if not process.process.is_alive():
            return False
        if process.ping(PING_WAIT):
            self._silent_since.pop(id(process), None)
            return True
        since = self._silent_since.setdefault(id(process), time.monotonic())
        if time.monotonic() - since < self.config.timeout_worker_healthcheck:
            return True
        self._silent_since.pop(id(process), None)
        return False
