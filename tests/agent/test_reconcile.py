"""Drift: running domains without allocations and allocations without domains."""

from __future__ import annotations

from prometheus_client import REGISTRY

from agent.discovery.model import Domain
from agent.reconcile import (
    ALLOCATION_WITHOUT_DOMAIN,
    DOMAIN_WITHOUT_ALLOCATION,
    find_drift,
    report_drift,
)

RUNNING = Domain("aaaaaaaa-0000-4000-8000-000000000001", "web", True, 2, 1024, 10**9)
STOPPED = Domain("aaaaaaaa-0000-4000-8000-000000000002", "batch", False, 1, 512, 0)
GHOST = "aaaaaaaa-0000-4000-8000-000000000003"


def test_no_drift_when_every_running_domain_has_an_allocation():
    drift = find_drift([RUNNING], {RUNNING.uuid.upper(): {"VCPU": 2}})

    assert not drift.found


def test_running_domain_without_allocation_is_drift():
    drift = find_drift([RUNNING], {})

    assert drift.domains_without_allocation == (RUNNING,)
    assert drift.found


def test_allocation_for_a_stopped_domain_is_not_drift():
    drift = find_drift([STOPPED], {STOPPED.uuid: {"VCPU": 1}})

    assert not drift.found


def test_stopped_domain_without_allocation_is_not_drift():
    assert not find_drift([STOPPED], {}).found


def test_allocation_with_no_domain_is_drift():
    drift = find_drift([RUNNING], {RUNNING.uuid: {"VCPU": 2}, GHOST: {"MEMORY_MB": 64}})

    assert drift.allocations_without_domain == {GHOST: {"MEMORY_MB": 64}}


def test_drift_is_logged_and_counted_per_kind(caplog):
    drift = find_drift([RUNNING], {GHOST: {"VCPU": 1}})

    with caplog.at_level("WARNING", logger="agent.reconcile"):
        report_drift("drift-host", drift)

    for kind in (DOMAIN_WITHOUT_ALLOCATION, ALLOCATION_WITHOUT_DOMAIN):
        labels = {"provider": "drift-host", "kind": kind}
        assert REGISTRY.get_sample_value("placement_agent_drift", labels) == 1
    assert any(RUNNING.uuid in message for message in caplog.messages)
    assert any(GHOST in message and "VCPU=1" in message for message in caplog.messages)
