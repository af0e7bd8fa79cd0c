"""``strategy: chance``: a random host among every host that passes the filters,
without weighing; the engine's seeded RNG makes it repeatable."""

from __future__ import annotations

import random
import uuid
from collections import Counter

from scheduler.answers.explain import InstanceExplanation
from scheduler.deciding.choosing import Chooser
from scheduler.deciding.pipeline import Pipeline
from scheduler.placement.host_state import HostState
from scheduler.settings import SchedulerSettings
from tests.scheduler.factories import Node, cycle_of, decide, hosts_for

REQUEST = {"VCPU": 1, "MEMORY_MB": 1024}


def hosts() -> list[HostState]:
    """Four hosts; spread would always take the huge one, and tiny-3 is disabled."""
    return hosts_for(
        [
            Node("huge", capacity={"VCPU": 128, "MEMORY_MB": 1 << 20}),
            Node("tiny-1", capacity={"VCPU": 2, "MEMORY_MB": 2048}),
            Node("tiny-2", capacity={"VCPU": 2, "MEMORY_MB": 2048}),
            Node("tiny-3", traits=("COMPUTE_STATUS_DISABLED",)),
        ],
        REQUEST,
    )


def picks(strategy: str, seed: int, decisions: int) -> list[str]:
    settings = SchedulerSettings(strategy=strategy, feasible_hosts_to_score=1)
    chooser = Chooser(settings, Pipeline.from_settings(settings), random.Random(seed))
    chosen = []
    for _ in range(decisions):
        candidates = hosts()
        report = InstanceExplanation(consumer_uuid=str(uuid.uuid4()), hosts_considered=4)
        weighed = decide(chooser, candidates, cycle_of(), report)
        assert report.picked_at_random == (strategy == "chance")
        chosen.append(chooser.claim_order(weighed)[0].name)
    return chosen


def test_chance_picks_every_host_that_passes_the_filters_and_no_other() -> None:
    counts = Counter(picks("chance", seed=11, decisions=300))
    assert set(counts) == {"huge", "tiny-1", "tiny-2"}
    assert min(counts.values()) > 60  # about 100 each: not weighed, not a fixed pick


def test_spread_on_the_same_hosts_always_takes_the_roomiest() -> None:
    assert set(picks("spread", seed=11, decisions=20)) == {"huge"}


def test_the_same_seed_gives_the_same_picks_and_another_seed_others() -> None:
    assert picks("chance", seed=3, decisions=40) == picks("chance", seed=3, decisions=40)
    assert picks("chance", seed=3, decisions=40) != picks("chance", seed=4, decisions=40)


def test_chance_runs_no_weigher() -> None:
    settings = SchedulerSettings(strategy="chance")
    assert Pipeline.from_settings(settings).weighers == []
