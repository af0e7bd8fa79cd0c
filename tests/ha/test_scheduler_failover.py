"""Two API processes (standing in for two machines) on a Patroni cluster, the
scheduler on the first with its host cache following the change feed, and
other clients claiming through the second, across a crash failover: once
settled, the scheduler's cached usage equals the API's, and no host is
over capacity (docs/ha.md)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from placement_client import PlacementError
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError
from scheduler.placement.query import candidates_query
from scheduler.request.spec import ScheduleRequest, resource_request
from scheduler.settings import SchedulerSettings
from tests.ha.patroni_api import api_on_patroni
from tests.ha.traffic import CAPACITY, Claims, claim_forever, settled_state, wait_for_writes
from tests.scheduler.live import scheduler_placement
from tests.support.databases import BACKENDS
from tests.support.patroni_cluster import available

pytestmark = [
    pytest.mark.skipif(
        not available() or "postgresql" not in BACKENDS,
        reason="needs Patroni, etcd and PostgreSQL (make patroni)",
    ),
    pytest.mark.xdist_group("high_availability"),
]

HOSTS = 6
FLAVOR = {"VCPU": 2}
# Placements and other claims each stop here, so hosts keep room whatever the
# machine's speed (6 x 100 VCPU): the cache's view of them is compared below.
MOST_PLACED = 80
# Between placements, so that they go on before, during and after the failover.
PLACING_PAUSE = 0.1
MOST_CLAIMED = 250


def _request() -> ScheduleRequest:
    return ScheduleRequest.model_validate(
        {"resources": FLAVOR, "consumer_uuids": [str(uuid.uuid4())]}
    )


async def _schedule_forever(
    scheduler: Scheduler, outcomes: dict[str, int], running: list[bool]
) -> None:
    while running[0]:
        if outcomes.get("placed", 0) >= MOST_PLACED:
            await asyncio.sleep(0.05)
            continue
        try:
            await scheduler.schedule(_request())
            outcomes["placed"] = outcomes.get("placed", 0) + 1
            await asyncio.sleep(PLACING_PAUSE)
        except NoValidHostError:
            outcomes["no valid host"] = outcomes.get("no valid host", 0) + 1
            await asyncio.sleep(0.05)
        except PlacementError as exc:
            outcomes[f"placement {exc.status}"] = outcomes.get(f"placement {exc.status}", 0) + 1
            await asyncio.sleep(0.1)


async def _stop_claims_at(claims: Claims, most: int) -> None:
    while claims.running:
        if len(claims.acknowledged) >= most:
            claims.running = False
        await asyncio.sleep(0.05)


async def _cached_free(scheduler: Scheduler) -> dict[str, int]:
    limit = scheduler.settings.max_allocation_candidates
    spec = ScheduleRequest.model_validate({"resources": FLAVOR})
    view = await scheduler.host_cache.view(candidates_query(resource_request(spec), limit))
    return {host.uuid: host.free("VCPU") for host in view.hosts}


def test_the_schedulers_cache_matches_the_api_after_a_failover_and_nothing_is_overcommitted() -> (
    None
):
    with api_on_patroni(synchronous=True, servers=2, providers_wanted=HOSTS) as setup:
        first, second = (server.url for server in setup.servers)
        cluster = setup.cluster

        async def run() -> tuple[dict[str, int], dict[str, int], Claims]:
            settings = SchedulerSettings(
                api_url=first, host_cache_seconds=3600.0, provider_cache_seconds=3600.0
            )
            client = scheduler_placement(first)
            scheduler = Scheduler(settings, client)
            await scheduler.start()
            claims, running = Claims(), [True]
            outcomes: dict[str, int] = {}
            others = asyncio.ensure_future(claim_forever(second, setup.providers, claims, 1))
            enough = asyncio.ensure_future(_stop_claims_at(claims, MOST_CLAIMED))
            placing = asyncio.ensure_future(_schedule_forever(scheduler, outcomes, running))
            try:
                await asyncio.sleep(2)
                old = cluster.leader()
                await asyncio.to_thread(cluster.crash, old)
                await asyncio.to_thread(wait_for_writes, first)
                await asyncio.sleep(3)
            finally:
                claims.running = False
                running[0] = False
                await asyncio.gather(others, placing, enough)
            try:
                # Settled: the scheduler has applied everything committed so far.
                head = (await client.changes(None)).index
                await asyncio.wait_for(scheduler.feed.reached(head), 30)
                return await _cached_free(scheduler), outcomes, claims
            finally:
                await scheduler.aclose()
                await client.aclose()

        began = time.monotonic()
        cached, outcomes, claims = asyncio.run(run())
        print(
            f"\nscheduler across a crash: {outcomes}; other clients {claims.statuses}; "
            f"{time.monotonic() - began:.1f}s"
        )
        assert outcomes.get("placed", 0) > 0
        assert cached, "every host is full: nothing left to compare"
        for rp, (usage, allocated) in settled_state(first, setup.providers).items():
            assert usage == allocated, rp
            assert usage <= CAPACITY, rp
            if rp in cached:
                assert cached[rp] == CAPACITY - usage, rp
            else:
                # Left out of the candidates: the API agrees it has no room for one more.
                assert CAPACITY - usage < FLAVOR["VCPU"], rp
