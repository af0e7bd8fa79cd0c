"""Prometheus metrics the agent exposes (``--metrics-port``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

DRIFT = Gauge(
    "placement_agent_drift",
    "Domains and allocations that do not match, by kind, at the last reconcile.",
    ["provider", "kind"],
)
PASSES = Counter(
    "placement_agent_passes",
    "Reporting passes by outcome.",
    ["provider", "outcome"],
)
LAST_SUCCESS = Gauge(
    "placement_agent_last_success_timestamp_seconds",
    "When a pass last brought Placement up to date.",
    ["provider"],
)
