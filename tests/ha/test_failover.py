"""The API on a Patroni cluster (two members, etcd) under a claim load with a
change-feed follower, through a switchover and a crash failover
(docs/ha.md). The API is given the multi-host URL with
``target_session_attrs=read-write``, as deploy/ shows.

- switchover: 0 acknowledged claims lost, the feed exact, 503s with
  Retry-After meanwhile, LISTEN working within 1 s of the new primary;
- crash (the leader's Patroni and postmaster SIGKILLed), synchronous mode:
  0 acknowledged claims lost, no provider over capacity, usage equal to the
  sum of allocations, the feed exact;
- the same crash with asynchronous replication, a negative control: claims
  may be lost, but a follower never reads an index of the same epoch that
  now means another entry.

Each prints what it measured (run with ``-s``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

from tests.ha.patroni_api import Setup, api_on_patroni
from tests.ha.traffic import (
    CAPACITY,
    HEADERS,
    Claims,
    Follower,
    claim_forever,
    missing_claims,
    settled_state,
    wait_for_writes,
    wake_latency,
    whole_feed,
)
from tests.support.databases import BACKENDS
from tests.support.patroni_cluster import Member, PatroniCluster, available

PROVIDERS = 6
ROOMY_PROVIDERS = 60
CLAIMERS = 6
LOAD_BEFORE = 2.0
LOAD_AFTER = 2.0
LAG = 1.0  # seconds the standby receives nothing before the asynchronous crash

pytestmark = [
    pytest.mark.skipif(
        not available() or "postgresql" not in BACKENDS,
        reason="needs Patroni, etcd and PostgreSQL (make patroni)",
    ),
    pytest.mark.xdist_group("high_availability"),
]


@dataclass
class Run:
    claims: Claims
    follower: Follower  # keeps up with the head
    slow: Follower  # falls behind it
    start_index: int
    fault_at: float
    primary_at: float  # when the new primary answered as such


async def _under_load(setup: Setup, fault: Callable[[], Member]) -> Run:
    claims = Claims()
    follower = Follower(setup.server.url)
    slow = Follower(setup.server.url, page=5, pause=0.5)
    async with httpx.AsyncClient(base_url=setup.server.url, headers=HEADERS) as client:
        start_index = (await client.get("/changes")).json()["index"]
    load = asyncio.ensure_future(claim_forever(setup.server.url, setup.providers, claims, CLAIMERS))
    following = asyncio.gather(follower.run(), slow.run())
    try:
        await asyncio.sleep(LOAD_BEFORE)
        fault_at = time.monotonic()
        await asyncio.to_thread(fault)
        primary_at = time.monotonic()
        await asyncio.to_thread(wait_for_writes, setup.server.url)
        await asyncio.sleep(LOAD_AFTER)
    finally:
        claims.running = False
        follower.running = slow.running = False
        await asyncio.gather(load, following)
    return Run(claims, follower, slow, start_index, fault_at, primary_at)


def _other(cluster: PatroniCluster, member: Member) -> Member:
    return next(m for m in cluster.members if m is not member)


def _new_leader(cluster: PatroniCluster, old: Member) -> Member:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        leader = cluster.leader()
        if leader is not old:
            return leader
        time.sleep(0.2)
    raise AssertionError(f"no new leader: {cluster.log_tail()}")


def _report(name: str, run: Run) -> None:
    unavailable = [sent for sent, _ in run.claims.unavailable]
    window = max(unavailable) - min(unavailable) if unavailable else 0.0
    print(
        f"\n{name}: {len(run.claims.acknowledged)} claims acknowledged, statuses "
        f"{run.claims.statuses}, {run.claims.transport_errors} transport errors; "
        f"503s over {window:.1f}s; new primary {run.primary_at - run.fault_at:.1f}s after "
        f"the fault; resyncs: follower {run.follower.resyncs}, slow one {run.slow.resyncs}"
    )


def _check_kept(setup: Setup, run: Run) -> None:
    """Nothing acknowledged lost, nothing over capacity, usage = allocations,
    and the feed exact: gap-free, with every acknowledged claim, and the same
    entry at every index a follower read."""
    assert run.claims.acknowledged
    assert missing_claims(setup.server.url, run.claims.acknowledged) == []
    for rp, (usage, allocated) in settled_state(setup.server.url, setup.providers).items():
        assert usage == allocated, rp
        assert usage <= CAPACITY, rp
    _, feed = whole_feed(setup.server.url, run.start_index)
    recorded = {entry["uuid"] for entry in feed.values() if entry["resource"] == "allocation"}
    assert set(run.claims.acknowledged) <= recorded
    for index, _epoch, change in run.follower.seen + run.slow.seen:
        assert feed[index] == change, index
    assert all(retry == "1" for _, retry in run.claims.unavailable)


def test_a_switchover_under_claims_loses_nothing_and_the_feed_listens_again() -> None:
    with api_on_patroni(synchronous=True) as setup:
        cluster = setup.cluster

        def switchover() -> Member:
            old = cluster.leader()
            cluster.switchover(old, _other(cluster, old))
            return _new_leader(cluster, old)

        run = asyncio.run(_under_load(setup, switchover))
        _report("switchover", run)
        _check_kept(setup, run)
        # LISTEN follows the new primary: a waiting reader wakes at once, not at
        # the next poll (changes_poll_interval, 5 s).
        time.sleep(max(0.0, run.primary_at + 1.0 - time.monotonic()))
        latency = wake_latency(setup.server.url)
        print(f"switchover: a waiting feed reader woke {latency * 1000:.0f} ms after a write")
        assert latency < 1.0
        assert "LISTEN works again" in setup.server.log_text()


def test_a_crashed_primary_in_synchronous_mode_loses_no_acknowledged_claim() -> None:
    with api_on_patroni(synchronous=True) as setup:
        cluster = setup.cluster

        def crash() -> Member:
            old = cluster.leader()
            cluster.crash(old)
            return _new_leader(cluster, old)

        run = asyncio.run(_under_load(setup, crash))
        _report("crash, synchronous", run)
        _check_kept(setup, run)


def test_a_crash_with_asynchronous_replication_never_reuses_an_index_silently() -> None:
    # Room for the whole load: claims must still be acknowledged while WAL
    # shipping is paused, or there is nothing to lose (the providers of the
    # other tests fill up, which a slow machine reached before the fault).
    with api_on_patroni(synchronous=False, providers_wanted=ROOMY_PROVIDERS) as setup:
        cluster = setup.cluster

        def crash() -> Member:
            old = cluster.leader()
            # The primary stops sending WAL for a while before the crash, as over a
            # stalled link: what it acknowledged meanwhile is lost.
            with cluster.sending_paused(old):
                time.sleep(LAG)
                cluster.crash(old)
            return _new_leader(cluster, old)

        run = asyncio.run(_under_load(setup, crash))
        _report("crash, asynchronous", run)
        lost = missing_claims(setup.server.url, run.claims.acknowledged)
        print(f"crash, asynchronous: {len(lost)} acknowledged claims lost (allowed here)")
        assert lost, "the standby was behind: some acknowledged claims should be lost"
        for rp, (usage, allocated) in settled_state(setup.server.url, setup.providers).items():
            assert usage == allocated, rp
        epoch, feed = whole_feed(setup.server.url, run.start_index)
        for follower in (run.follower, run.slow):
            # Under the epoch the feed has now, an index means what the follower read.
            for index, read_epoch, change in follower.seen:
                if read_epoch == epoch:
                    assert feed[index] == change, index
            reused = [
                i for i, e, change in follower.seen if e != epoch and feed.get(i, change) != change
            ]
            print(f"crash, asynchronous: {len(reused)} indexes a follower read mean another entry")
            # Every follower has every acknowledged entry, or knows it must re-read.
            read = {change["uuid"] for _, _, change in follower.seen}
            kept = set(run.claims.acknowledged) - set(lost)
            assert kept <= read or follower.resyncs
            if reused:
                assert follower.resyncs
        # The slow follower was behind the new head: the epoch, not a 410, told it.
        assert any(why.startswith("epoch") for why in run.slow.resyncs), run.slow.resyncs
