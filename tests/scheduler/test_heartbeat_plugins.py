"""The liveness filter and the metrics weigher and filter, on ``GET /heartbeats``
answers as the contract gives them (the server's ``now`` is the clock)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.deciding.pipeline import Pipeline
from scheduler.placement.heartbeats import HeartbeatsAnswer, HeartbeatSnapshot
from scheduler.placement.host_state import HostState
from scheduler.plugins import FILTERS
from scheduler.plugins.cycle import Cycle
from scheduler.plugins.filters import metrics as metrics_filter
from scheduler.plugins.heartbeats import HEARTBEATS
from scheduler.plugins.weighers import metrics as metrics_weigher
from scheduler.settings import SchedulerSettings
from tests.scheduler.factories import Clock, Node, cycle_of, hosts_for

NOW = "2026-11-23T12:00:00Z"
RATIOS = {"cpu.percent": -1.0, "memory.used": -0.5}


def beat(host: HostState, last_seen: str, down_after: str, **metrics: float) -> dict[str, Any]:
    return {
        "resource_provider_uuid": host.uuid,
        "name": host.name,
        "last_seen": last_seen,
        "interval": 60,
        "down_after": down_after,
        "alive": down_after >= NOW,
        "metrics": {name.replace("_", "."): value for name, value in metrics.items()},
        "metrics_at": last_seen if metrics else None,
    }


def cloud() -> list[HostState]:
    return hosts_for([Node(f"h{i}") for i in range(4)], {"VCPU": 1})


def snapshot(hosts: list[HostState], clock: Clock) -> HeartbeatSnapshot:
    """h0 busy and up, h1 idle and up (until 12:01), h2 down since 11:50, h3 silent."""
    answer = {
        "now": NOW,
        "heartbeats": [
            beat(
                hosts[0],
                "2026-11-23T11:59:30Z",
                "2026-11-23T12:02:30Z",
                cpu_percent=90,
                memory_used=8000,
            ),
            beat(
                hosts[1],
                "2026-11-23T11:58:00Z",
                "2026-11-23T12:01:00Z",
                cpu_percent=10,
                memory_used=2000,
            ),
            beat(
                hosts[2],
                "2026-11-23T11:50:00Z",
                "2026-11-23T11:53:00Z",
                cpu_percent=0,
                memory_used=0,
            ),
        ],
    }
    return HeartbeatSnapshot.of(HeartbeatsAnswer.model_validate(answer), clock)


def context_with(heartbeats: HeartbeatSnapshot) -> Cycle:
    context = cycle_of()
    context.state.write(HEARTBEATS, heartbeats)
    return context


def reasons(hosts: list[HostState], context: Cycle) -> dict[str, str]:
    liveness = FILTERS["liveness"]()
    return {h.name: liveness.verdict(h, context).reason for h in hosts}


def test_a_host_past_down_after_is_rejected_and_a_silent_one_passes_unknown() -> None:
    hosts = cloud()
    context = context_with(snapshot(hosts, Clock()))
    verdicts = {h.name: FILTERS["liveness"]().verdict(h, context).passed for h in hosts}
    assert verdicts == {"h0": True, "h1": True, "h2": False, "h3": True}
    assert reasons(hosts, context) == {
        "h0": "",
        "h1": "",
        "h2": "agent down since 2026-11-23T11:50:00.000000Z",
        "h3": "liveness unknown: no heartbeat from this host",
    }


def test_liveness_follows_the_server_clock_forward_from_the_read() -> None:
    hosts, clock = cloud(), Clock()
    context = context_with(snapshot(hosts, clock))
    clock.now += 90  # 12:01:30 on the server's clock: h1 missed its heartbeats
    assert reasons(hosts, context)["h1"] == "agent down since 2026-11-23T11:58:00.000000Z"
    assert reasons(hosts, context)["h0"] == ""


def test_an_api_without_heartbeats_leaves_every_host_eligible_and_says_so() -> None:
    hosts = cloud()
    context = context_with(HeartbeatSnapshot.of(None, Clock()))
    assert set(reasons(hosts, context).values()) == {
        "liveness unknown: Placement offers no GET /heartbeats"
    }


def test_the_liveness_report_lists_the_hosts_of_unknown_liveness() -> None:
    hosts = cloud()
    pipeline = Pipeline.from_settings(SchedulerSettings(enabled_filters=["liveness"]))
    passed, (report,) = pipeline.run_filters(hosts, context_with(snapshot(hosts, Clock())))
    assert [h.name for h in passed] == ["h0", "h1", "h3"]
    assert [(n.host, n.note) for n in report.noted] == [
        ("h3", "liveness unknown: no heartbeat from this host")
    ]


def weighed(hosts: list[HostState], context: Cycle) -> list[tuple[str, float]]:
    context.state.write(metrics_weigher.RATIOS, RATIOS)
    pipeline = Pipeline.from_settings(SchedulerSettings(enabled_weighers=["metrics"]))
    return [(w.host.name, round(w.total, 3)) for w in pipeline.weigh(hosts, context)]


def test_the_metrics_weigher_prefers_idle_hosts_and_puts_hosts_without_fresh_metrics_last() -> None:
    hosts = cloud()
    # raw: h0 -90-4000 = -4090, h1 -10-1000 = -1010; h2 (down) and h3 (silent) unavailable
    order = weighed(hosts, context_with(snapshot(hosts, Clock())))
    assert order == [("h1", 1.0), ("h0", 0.5), ("h2", 0.0), ("h3", 0.0)]


def test_metrics_older_than_the_heartbeat_window_are_not_fresh() -> None:
    hosts = cloud()
    heartbeats = snapshot(hosts, Clock())
    h1 = heartbeats.by_host[hosts[1].uuid]
    # Heartbeats kept coming (last 11:58:00, window 3 min) but the metrics stopped at 11:56.
    h1.metrics_at = h1.metrics_at.replace(minute=56) if h1.metrics_at else None
    assert heartbeats.fresh_metrics(hosts[1].uuid) is None
    assert heartbeats.down_since(hosts[1].uuid) is None
    assert weighed(hosts, context_with(heartbeats))[0] == ("h0", 1.0)


def test_metrics_required_rejects_hosts_without_fresh_metrics() -> None:
    hosts = cloud()
    context = context_with(snapshot(hosts, Clock()))
    context.state.write(metrics_filter.REQUIRED, RATIOS)
    pipeline = Pipeline.from_settings(SchedulerSettings(enabled_filters=["metrics"]))
    passed, (report,) = pipeline.run_filters(hosts, context)
    assert [h.name for h in passed] == ["h0", "h1"]
    assert {r.host: r.reason for r in report.rejected} == {
        "h2": "metrics: no fresh cpu.percent, memory.used from this host",
        "h3": "metrics: no fresh cpu.percent, memory.used from this host",
    }


def test_weight_setting_reads_novas_syntax_and_rejects_what_is_not_a_pair() -> None:
    settings = SchedulerSettings(metrics_weight_setting="cpu.percent=-1.0, memory.used=-0.5")
    assert settings.metrics_weight_setting == RATIOS
    with pytest.raises(ValueError, match=r"'cpu\.percent' is not name=ratio"):
        SchedulerSettings(metrics_weight_setting="cpu.percent")
