"""haproxy in front of a Patroni cluster, docs/ha.md's second way of
following the primary: deploy/ha/haproxy-postgresql.cfg and
deploy/ha/placement-api-haproxy.env as shipped, only their addresses and
ports replaced by the test cluster's, so a wrong health check fails here.

- the API's idle connections (the change feed's LISTEN) outlive the
  defaults' idle timeouts (Debian's 50 s, 2 s here): the shipped sections
  set their own;
- port 5000 reaches the primary and 5001 the standby: with the standby's
  replay paused, the API's plain read of its own write is stale (it was
  served by the standby) and one sending back X-Placement-Read-After is not;
- a switchover under claims and provider creations: writes answer 503 with
  the shipped Retry-After for a bounded time, then succeed on the new
  primary through the same port 5000; 5001 reaches the old primary, now a
  standby, and the reads with it; no acknowledged write lost.

Prints what it measured (run with ``-s``).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest

from placement_api.db import migrations
from tests.ha.traffic import (
    CAPACITY,
    FROM_PRIMARY,
    HEADERS,
    Claims,
    claim_forever,
    create_providers,
    missing_claims,
    settled_state,
    wait_for_writes,
)
from tests.support.databases import BACKENDS
from tests.support.patroni_cluster import Member, PatroniCluster, available, patroni_cluster
from tests.support.server import free_port, live_server, stop

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "ha"
HAPROXY = Path("/usr/sbin/haproxy")
# The shipped files' ports: writes (the primary) and reads (a standby).
WRITES, READS = 5000, 5001
READ_AFTER = "X-Placement-Read-After"
READ_ROUNDS = 5
PROVIDERS = 6
CLAIMERS = 4
LOAD_BEFORE = 1.0
LOAD_AFTER = 1.0
# Longest writes may fail or wait: Patroni's switchover (about a second
# here), haproxy marking the new primary up (rise 2, fastinter 200 ms) and its
# retries of the connections the old one refused meanwhile (1 s apart).
WINDOW_BOUND = 10.0

pytestmark = [
    pytest.mark.skipif(
        not available() or not HAPROXY.exists() or "postgresql" not in BACKENDS,
        reason="needs Patroni, etcd, haproxy and PostgreSQL (make patroni)",
    ),
    pytest.mark.xdist_group("high_availability"),
]

# What a machine's haproxy.cfg has before the shipped sections: Debian's
# defaults section, its idle timeouts (50 s) cut to IDLE_CUT so that the test
# sees within seconds what they would do to idle connections within a
# minute; health check state changes and errors logged to stdout.
IDLE_CUT = 2
PREAMBLE = f"""\
global
    log stdout format iso local0 info

defaults
    log global
    option tcplog
    option dontlog-normal
    timeout connect 5s
    timeout client {IDLE_CUT}s
    timeout server {IDLE_CUT}s

"""
_BIND = re.compile(r"^(\s*bind\s+[^\s:]+):(\d+)(.*)$")
_SERVER = re.compile(r"^(\s*server\s+(\S+)\s+)\S+:\d+(.*\bcheck\b.*\bport\s+)\d+(.*)$")
_URL_PORT = re.compile(r"(@[^@:/]+):(\d+)/")


def render_haproxy(shipped: str, members: list[Member], ports: dict[int, int]) -> str:
    """The shipped sections on the test's ports and members: the shipped
    ``bind`` ports mapped by ``ports``, the n-th server name (db-1, db-2, ...)
    the n-th member, its PostgreSQL and Patroni REST ports in place of the
    shipped ones; servers beyond the members are left out."""
    names: list[str] = []
    lines = []
    for line in shipped.splitlines():
        if bind := _BIND.match(line):
            lines.append(f"{bind[1]}:{ports[int(bind[2])]}{bind[3]}")
        elif server := _SERVER.match(line):
            names += [server[2]] if server[2] not in names else []
            if (index := names.index(server[2])) < len(members):
                member = members[index]
                lines.append(
                    f"{server[1]}127.0.0.1:{member.port}{server[3]}{member.rest_port}{server[4]}"
                )
        else:
            lines.append(line)
    rendered = PREAMBLE + "\n".join(lines) + "\n"
    for member in members:
        # Every member is a server of both sections, checked on its REST port.
        assert rendered.count(f"127.0.0.1:{member.port} ") == 2, rendered
    return rendered


def api_environment(shipped: str, ports: dict[int, int]) -> dict[str, str]:
    """The shipped env file's settings, the ports of its URLs mapped by ``ports``."""
    found = {}
    for line in shipped.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            found[name.strip()] = _URL_PORT.sub(
                lambda url: f"{url[1]}:{ports[int(url[2])]}/", value.strip()
            )
    return found


@contextmanager
def running_haproxy(config: str, directory: Path) -> Iterator[Path]:
    """haproxy in the foreground on ``config`` (checked first); yields its log."""
    path = directory / "haproxy.cfg"
    path.write_text(config)
    checked = subprocess.run(
        [str(HAPROXY), "-c", "-f", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr + config
    log = directory / "haproxy.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(HAPROXY), "-db", "-f", str(path)], stdout=output, stderr=subprocess.STDOUT
        )
    try:
        yield log
    finally:
        stop(process)


async def _reached(port: int) -> int:
    """The PostgreSQL port a new connection through haproxy's ``port`` reaches."""
    connection = await asyncpg.connect(
        host="127.0.0.1", port=port, user="postgres", database="postgres", timeout=2
    )
    try:
        found: int = await connection.fetchval("SELECT inet_server_port()")
        return found
    finally:
        await connection.close()


def wait_routed(port: int, member: Member, log: Path, timeout: float = 60) -> float:
    """Seconds until five new connections in a row through ``port`` reach
    ``member`` (a wrong member still up in the section would take every
    other one)."""
    began = time.monotonic()
    streak = 0
    while time.monotonic() - began < timeout:
        try:
            reached = asyncio.run(_reached(port))
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            reached = None
        streak = streak + 1 if reached == member.port else 0
        if streak == 5:
            return time.monotonic() - began
        time.sleep(0.1)
    raise AssertionError(f"port {port} never reached {member.name}: {log.read_text()[-3000:]}")


async def _create_database(leader: Member) -> None:
    admin = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{leader.port}/postgres")
    try:
        # The shipped URL's role; the test cluster trusts 127.0.0.1, so its
        # password is never asked for.
        await admin.execute("CREATE ROLE placement LOGIN")
        await admin.execute("CREATE DATABASE placement OWNER placement")
    finally:
        await admin.close()


def check_reads(url: str, cluster: PatroniCluster, standby: Member) -> None:
    """With ``standby``'s replay paused, each new provider read back at once:
    a plain read misses it (the standby served it), one with the write's
    X-Placement-Read-After finds it."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as client:
        with cluster.replay_paused(standby):
            stale = fresh = 0
            for _ in range(READ_ROUNDS):
                created = client.post(
                    "/resource_providers", json={"name": f"read-{uuid.uuid4().hex[:10]}"}
                )
                assert created.status_code == 200, created.text
                rp, position = created.json()["uuid"], created.headers[READ_AFTER]
                assert position != "primary", "the API has a read URL: a WAL position"
                stale += client.get(f"/resource_providers/{rp}").status_code == 404
                after = client.get(f"/resource_providers/{rp}", headers={READ_AFTER: position})
                fresh += after.status_code == 200
        print(
            f"reads through {standby.name} (replay paused): {stale} of {READ_ROUNDS} plain "
            f"reads stale, {fresh} of {READ_ROUNDS} with {READ_AFTER} current"
        )
        assert (stale, fresh) == (READ_ROUNDS, READ_ROUNDS)


@dataclass
class Creations(Claims):
    slowest: float = 0.0  # seconds, the longest creation took
    gap: float = 0.0  # seconds, the longest without an acknowledged creation
    last: float | None = None  # when the last one was acknowledged


async def create_forever(url: str, created: Creations) -> None:
    """A client creating providers in a loop (recorded as ``claim_forever``
    records its claims)."""
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=30) as client:
        while created.running:
            try:
                sent = time.monotonic()
                answer = await client.post(
                    "/resource_providers", json={"name": f"load-{uuid.uuid4().hex[:10]}"}
                )
                created.slowest = max(created.slowest, time.monotonic() - sent)
            except httpx.TransportError:
                created.transport_errors += 1
                await asyncio.sleep(0.05)
                continue
            created.statuses[answer.status_code] = created.statuses.get(answer.status_code, 0) + 1
            if answer.status_code == 200:
                created.acknowledged.append(answer.json()["uuid"])
                now = time.monotonic()
                created.gap = max(created.gap, now - (created.last or now))
                created.last = now
            elif answer.status_code == 503:
                created.unavailable.append((time.monotonic(), answer.headers.get("retry-after")))
                await asyncio.sleep(0.05)


async def switchover_under_load(
    url: str, providers: list[str], cluster: PatroniCluster, old: Member, new: Member
) -> tuple[Claims, Creations, float]:
    """Claims and provider creations through a switchover from ``old`` to
    ``new``; the seconds from asking for it until a write succeeds again."""
    claims, created = Claims(), Creations()
    load = asyncio.gather(
        claim_forever(url, providers, claims, CLAIMERS), create_forever(url, created)
    )
    try:
        await asyncio.sleep(LOAD_BEFORE)
        asked = time.monotonic()
        await asyncio.to_thread(cluster.switchover, old, new)
        await asyncio.to_thread(wait_for_writes, url)
        writes_back = time.monotonic() - asked
        await asyncio.sleep(LOAD_AFTER)
    finally:
        claims.running = created.running = False
        await load
    return claims, created, writes_back


def _window(*records: Claims) -> float:
    sent = [at for record in records for at, _ in record.unavailable]
    return max(sent) - min(sent) if sent else 0.0


def check_kept(url: str, providers: list[str], claims: Claims, created: Creations) -> None:
    """Every acknowledged claim and provider there, no provider over capacity,
    usage equal to the sum of allocations."""
    assert missing_claims(url, claims.acknowledged) == []
    with httpx.Client(base_url=url, headers=FROM_PRIMARY, timeout=30) as client:
        lost = [
            rp
            for rp in created.acknowledged + providers
            if client.get(f"/resource_providers/{rp}").status_code != 200
        ]
    assert lost == []
    for rp, (usage, allocated) in settled_state(url, providers).items():
        assert usage == allocated <= CAPACITY, rp


def test_haproxy_follows_the_primary_and_a_standby_through_a_switchover() -> None:
    with patroni_cluster(2, synchronous=True) as cluster:
        ports = {WRITES: free_port(), READS: free_port()}
        config = render_haproxy(
            (DEPLOY / "haproxy-postgresql.cfg").read_text(), cluster.members, ports
        )
        env = api_environment((DEPLOY / "placement-api-haproxy.env").read_text(), ports)
        url, retry_after = env.pop("PLACEMENT_DATABASE_URL"), env["PLACEMENT_RETRY_AFTER"]
        old = cluster.leader()
        new = next(member for member in cluster.members if member is not old)
        asyncio.run(_create_database(old))
        with running_haproxy(config, cluster.directory) as log:
            wait_routed(ports[WRITES], old, log)
            wait_routed(ports[READS], new, log)
            migrations.upgrade(url)
            with live_server(url, workers=1, **env) as server:
                # Nothing written meanwhile: the change feed's LISTEN connection idles.
                time.sleep(IDLE_CUT + 1)
                assert "LISTEN connection lost" not in server.log_text(), log.read_text()
                check_reads(server.url, cluster, new)
                with httpx.Client(base_url=server.url, headers=HEADERS, timeout=30) as client:
                    providers = create_providers(client, PROVIDERS)
                claims, created, writes_back = asyncio.run(
                    switchover_under_load(server.url, providers, cluster, old, new)
                )
                on_new = wait_routed(ports[WRITES], new, log)
                on_old = wait_routed(ports[READS], old, log)
                window = _window(claims, created)
                print(
                    f"haproxy switchover: {len(claims.acknowledged)} claims and "
                    f"{len(created.acknowledged)} providers acknowledged, statuses "
                    f"{claims.statuses} / {created.statuses}; 503s over {window:.1f}s; "
                    f"no creation acknowledged for {created.gap:.1f}s, the slowest took "
                    f"{created.slowest:.1f}s; writes back {writes_back:.1f}s after the "
                    f"switchover was asked; then port {WRITES} on the new primary within "
                    f"{on_new:.1f}s, {READS} on the old one (a standby) within {on_old:.1f}s"
                )
                check_reads(server.url, cluster, old)
                # The switchover was seen (the old primary's shutdown ends the
                # transactions under way), as 503s with the shipped Retry-After;
                # a claim on a full provider is a 409 (capacity holds).
                assert claims.unavailable or created.unavailable
                for record, ok in ((claims, {204, 409}), (created, {200})):
                    assert record.acknowledged, record.statuses
                    assert set(record.statuses) <= ok | {503}, record.statuses
                    assert record.transport_errors == 0
                    assert {retry for _, retry in record.unavailable} <= {retry_after}
                assert max(window, created.gap, created.slowest) < WINDOW_BOUND
                check_kept(server.url, providers, claims, created)
