"""A private PostgreSQL cluster on a free port, that a test may stop, start,
freeze and thaw without touching the shared server.

The cluster lives in a temporary directory; as root, its commands run as
the ``postgres`` user (PostgreSQL refuses to run as root).
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
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
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


@contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
    directory = Path(tempfile.mkdtemp(prefix="placement-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(directory, user.pw_uid, user.pw_gid)
    cluster = PrivateCluster(binaries, directory, free_port())
    try:
        cluster.run(
            "initdb", "-D", str(cluster.data), "-U", "postgres", "-A", "trust", "--no-sync",
            "-E", "UTF8",
        )  # fmt: skip
        cluster.start()
        try:
            yield cluster
        finally:
            with suppress(OSError, ValueError):
                cluster.thaw()
            cluster.run("pg_ctl", "stop", "-m", "immediate", "-D", str(cluster.data), check=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
