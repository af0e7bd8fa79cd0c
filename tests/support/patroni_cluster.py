"""A private etcd and a Patroni-managed PostgreSQL cluster of ``nodes``
members, under a temporary directory, on free ports (docs/ha.md).

The members are durable PostgreSQL servers streaming from the leader;
``synchronous`` sets Patroni's ``synchronous_mode`` (a commit returns once a
standby has its WAL). Patroni runs as ``postgres`` when we are root
(PostgreSQL refuses to run as root). ``url`` is the multi-host URL the API
is given, ``target_session_attrs=read-write`` following the leader.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.pg_cluster import server_binaries
from tests.support.server import free_port

PATRONI = Path("/usr/bin/patroni")
ETCD = Path("/usr/bin/etcd")
# Patroni's timings, short for a test: the leader key lives TTL seconds, so a
# lost leader is replaced within about that (docs/ha.md measures it).
TTL = 10
LOOP_WAIT = 1
RETRY_TIMEOUT = 3


def available() -> bool:
    return PATRONI.exists() and ETCD.exists() and server_binaries() is not None


def _as_postgres() -> dict[str, Any]:
    """Popen's arguments running Patroni itself (its pid, no wrapper's) as ``postgres``."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("postgres")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(path, user.pw_uid, user.pw_gid)


@dataclass
class Member:
    name: str
    port: int
    rest_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def state(self) -> dict[str, Any]:
        """Patroni's REST view of this member ({} when it does not answer)."""
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.rest_port}/patroni", timeout=2
            ) as r:
                found: dict[str, Any] = json.loads(r.read())
                return found
        except (OSError, ValueError):
            return {}

    def postmaster(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


def _children(parent: int | None) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(stat.parent.name))
    return found


@dataclass
class PatroniCluster:
    directory: Path
    etcd_port: int
    members: list[Member]
    synchronous: bool
    scope: str = "placement"
    etcd: subprocess.Popen[bytes] | None = None
    logs: list[Path] = field(default_factory=list)

    def url(self, database: str = "placement") -> str:
        hosts = "&".join(f"host=127.0.0.1:{member.port}" for member in self.members)
        return f"postgresql+asyncpg://postgres@/{database}?{hosts}&target_session_attrs=read-write"

    def member_url(self, member: Member, database: str = "placement") -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{member.port}/{database}"

    def leader(self, timeout: float = 60, *, starting: bool = False) -> Member:
        """The member that is the running primary, once there is one;
        ``starting``: no started member may have exited meanwhile."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if starting and any(m.process and m.process.poll() is not None for m in self.members):
                raise RuntimeError(f"a member exited while starting: {self.log_tail()}")
            for member in self.members:
                state = member.state()
                if state.get("role") in ("master", "primary") and state.get("state") == "running":
                    return member
            time.sleep(0.2)
        raise RuntimeError(f"no leader within {timeout}s: {self.log_tail()}")

    def replicas_streaming(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            streaming = [
                m
                for m in self.members
                if m.state().get("role") == "replica" and m.state().get("state") == "running"
            ]
            if len(streaming) >= count and self._synchronous_ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"replicas not streaming within {timeout}s: {self.log_tail()}")

    def _synchronous_ready(self) -> bool:
        if not self.synchronous:
            return True
        for member in self.members:
            state = member.state()
            if state.get("role") in ("master", "primary"):
                return bool(state.get("replication")) and any(
                    r.get("sync_state") == "sync" for r in state.get("replication", [])
                )
        return False

    def switchover(self, leader: Member, candidate: Member) -> None:
        """A planned switchover through Patroni's REST API."""
        body = json.dumps({"leader": leader.name, "candidate": candidate.name}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{leader.rest_port}/switchover",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200, answer.read()

    @contextmanager
    def sending_paused(self, member: Member) -> Iterator[None]:
        """The member's WAL senders stopped (SIGSTOP) for the block's duration:
        its standbys receive nothing meanwhile, as over a stalled link.
        (Pausing the receiver would not do: what the sender wrote waits in
        the receiver's socket buffer, and arrives after all.)"""
        senders = [
            pid
            for pid in _children(member.postmaster())
            if "walsender" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        ]
        assert senders, "the primary has no WAL sender"
        for pid in senders:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in senders:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    @contextmanager
    def replay_paused(self, member: Member) -> Iterator[None]:
        """The standby ``member`` receives and flushes WAL (synchronous commits
        return) but replays none of it for the block's duration: its startup
        process is stopped (SIGSTOP), so what it serves is stale meanwhile."""
        startup = [
            pid
            for pid in _children(member.postmaster())
            if "startup" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        ]
        assert len(startup) == 1, f"{member.name} has no startup process: is it a standby?"
        os.kill(startup[0], signal.SIGSTOP)
        try:
            yield
        finally:
            with suppress(ProcessLookupError):
                os.kill(startup[0], signal.SIGCONT)

    def crash(self, member: Member) -> None:
        """The machine is lost: its Patroni, its postmaster and every server
        process SIGKILLed at once (Patroni alone would restart a crashed
        postmaster in place, as leader; an orphaned WAL sender would still
        stream what a lost machine never sends)."""
        assert member.process is not None
        postmaster = member.postmaster()
        victims = [member.process.pid]
        if postmaster is not None:
            victims += [postmaster, *_children(postmaster)]
        for pid in victims:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        member.process.wait()
        member.process = None

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}"
            for log in self.logs
            if log.exists()
        )

    def _start_etcd(self) -> None:
        peer = free_port()
        log = self.directory / "etcd.log"
        self.logs.append(log)
        with log.open("wb") as output:
            self.etcd = subprocess.Popen(
                [
                    str(ETCD),
                    "--name", "etcd0",
                    "--data-dir", str(self.directory / "etcd"),
                    "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                    "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                    "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                    "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                    "--initial-cluster", f"etcd0=http://127.0.0.1:{peer}",
                    "--unsafe-no-fsync",
                ],
                stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with (
                suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=1) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"etcd did not start: {self.log_tail()}")

    def _config(self, member: Member) -> dict[str, Any]:
        binaries = server_binaries()
        return {
            "scope": self.scope,
            "name": member.name,
            "restapi": {
                "listen": f"127.0.0.1:{member.rest_port}",
                "connect_address": f"127.0.0.1:{member.rest_port}",
            },
            "etcd3": {"hosts": [f"127.0.0.1:{self.etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 16 * 1024 * 1024,
                    "synchronous_mode": self.synchronous,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": {
                            "wal_level": "replica",
                            "hot_standby": "on",
                            "wal_log_hints": "on",
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "max_connections": 100,
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"auth": "trust"}],
                "pg_hba": [
                    "local all all trust",
                    "host replication all 127.0.0.1/32 trust",
                    "host all all 127.0.0.1/32 trust",
                ],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{member.port}",
                "connect_address": f"127.0.0.1:{member.port}",
                "data_dir": str(member.data),
                "bin_dir": str(binaries),
                "pgpass": str(member.directory / "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres"},
                    "replication": {"username": "postgres"},
                    "rewind": {"username": "postgres"},
                },
                "parameters": {"unix_socket_directories": str(member.directory)},
            },
            "tags": {},
        }

    def start(self, member: Member) -> None:
        config = member.directory / "patroni.yml"
        config.write_text(yaml.safe_dump(self._config(member)))
        _own(config)
        log = member.directory / "patroni.log"
        if log not in self.logs:
            self.logs.append(log)
        with log.open("ab") as output:
            member.process = subprocess.Popen(
                [str(PATRONI), str(config)],
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=member.directory,
                **_as_postgres(),
            )

    def stop(self) -> None:
        for member in self.members:
            if member.process is not None:
                member.process.terminate()
        for member in self.members:
            if member.process is not None:
                try:
                    member.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    member.process.kill()
                    member.process.wait()
            pid = member.postmaster()
            if pid is not None:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.etcd is not None:
            self.etcd.terminate()
            self.etcd.wait(timeout=10)


# Ports are picked free, then bound by other processes: another test's
# server may take one in between. A cluster that lost that race starts over.
START_ATTEMPTS = 3


@contextmanager
def patroni_cluster(nodes: int = 2, *, synchronous: bool = True) -> Iterator[PatroniCluster]:
    for attempt in range(1, START_ATTEMPTS + 1):
        directory = Path(tempfile.mkdtemp(prefix="placement-patroni-"))
        cluster = _new_cluster(directory, nodes, synchronous)
        try:
            _bootstrap(cluster, nodes)
            break
        except RuntimeError as exc:
            cluster.stop()
            shutil.rmtree(directory, ignore_errors=True)
            if attempt == START_ATTEMPTS or "Address already in use" not in str(exc):
                raise
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _new_cluster(directory: Path, nodes: int, synchronous: bool) -> PatroniCluster:
    _own(directory)
    members = []
    for number in range(nodes):
        home = directory / f"node{number}"
        home.mkdir()
        _own(home)
        members.append(Member(f"node{number}", free_port(), free_port(), home))
    return PatroniCluster(directory, free_port(), members, synchronous)


def _bootstrap(cluster: PatroniCluster, nodes: int) -> None:
    cluster._start_etcd()
    # The first bootstraps alone; the others then clone it.
    cluster.start(cluster.members[0])
    cluster.leader(starting=True)
    for member in cluster.members[1:]:
        cluster.start(member)
    cluster.replicas_streaming(nodes - 1)
