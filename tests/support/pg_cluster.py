"""A private PostgreSQL cluster on a free port, that a test may stop, start,
freeze and thaw without touching the shared server.

The cluster lives in a temporary directory; as root, its commands run as
the ``postgres`` user (PostgreSQL refuses to run as root). It is durable
(fsync, synchronous_commit and full_page_writes as PostgreSQL ships them):
tests that count lost or resurrected writes across a crash must not be
fooled by a server that never promised to keep them. ``streaming_standby``
adds a hot standby replaying the cluster's WAL.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tests.support.server import free_port


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL's bin directory, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    return Path(found[-1]).parent if found else None


@dataclass
class PrivateCluster:
    bin: Path
    directory: Path
    port: int
    # More ``-c name=value`` server settings.
    settings: tuple[str, ...] = ()

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def run(self, program: str, *arguments: str, check: bool = True) -> None:
        """Run one of PostgreSQL's programs, as ``postgres`` when we are root."""
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*prefix, str(self.bin / program), *arguments],
            check=check,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self) -> None:
        options = " ".join(
            [
                f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1",
                *(f"-c {setting}" for setting in self.settings),
            ]
        )
        self.run(
            "pg_ctl",
            "start",
            "-w",
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "log"),
            "-o",
            options,
        )

    def stop(self) -> None:
        """A fast shutdown: sessions are ended, transactions under way rolled back."""
        self.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data))

    def _processes(self) -> list[int]:
        """The postmaster and every process it started."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children: dict[int, list[int]] = {}
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(Path(stat).parts[2]))
        found, pending = [], [postmaster]
        while pending:
            pid = pending.pop()
            found.append(pid)
            pending += children.get(pid, [])
        return found

    def freeze(self) -> None:
        """SIGSTOP every process of the cluster: connections stay open, nothing answers."""
        for pid in self._processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self._processes():
            os.kill(pid, signal.SIGCONT)


def _binaries() -> Path:
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
    return binaries


def _directory() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="placement-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(directory, user.pw_uid, user.pw_gid)
    return directory


@contextmanager
def _running(cluster: PrivateCluster) -> Iterator[PrivateCluster]:
    try:
        cluster.start()
        try:
            yield cluster
        finally:
            with suppress(OSError, ValueError):
                cluster.thaw()
            cluster.run("pg_ctl", "stop", "-m", "immediate", "-D", str(cluster.data), check=False)
    finally:
        shutil.rmtree(cluster.directory, ignore_errors=True)


@contextmanager
def private_cluster(*settings: str) -> Iterator[PrivateCluster]:
    cluster = PrivateCluster(_binaries(), _directory(), free_port(), settings)
    try:
        cluster.run(
            "initdb", "-D", str(cluster.data), "-U", "postgres", "-A", "trust", "--no-sync",
            "-E", "UTF8",
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(cluster.directory, ignore_errors=True)
        raise
    with _running(cluster) as running:
        yield running


@contextmanager
def streaming_standby(primary: PrivateCluster, *settings: str) -> Iterator[PrivateCluster]:
    """A hot standby of ``primary`` (a base backup, then streaming
    replication), with ``settings`` such as ``recovery_min_apply_delay=200ms``."""
    standby = PrivateCluster(primary.bin, _directory(), free_port(), settings)
    try:
        standby.run(
            "pg_basebackup", "-D", str(standby.data), "-h", "127.0.0.1", "-p", str(primary.port),
            "-U", "postgres", "-X", "stream", "-R", "--no-sync", "--checkpoint=fast",
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(standby.directory, ignore_errors=True)
        raise
    with _running(standby) as running:
        yield running
