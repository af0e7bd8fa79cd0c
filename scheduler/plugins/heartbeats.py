"""Host heartbeats and utilisation for the plugins that read them: read once per
request (whichever plugin asks first) into the cycle state."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from scheduler.placement.heartbeats import HeartbeatSnapshot
from scheduler.plugins.cycle import Cycle, StateKey

HEARTBEATS = StateKey[HeartbeatSnapshot]("heartbeats")


async def read_heartbeats(cycle: Cycle) -> None:
    if HEARTBEATS not in cycle.state:
        cycle.state.write(HEARTBEATS, await cycle.facts.heartbeats())


def rfc3339(moment: datetime) -> str:
    """As the API writes times: UTC, microseconds, ``Z``."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def missing_metrics(metrics: Mapping[str, float] | None, names: Mapping[str, float]) -> list[str]:
    """The names a host has no fresh value for (all of them without fresh metrics)."""
    return [name for name in names if metrics is None or name not in metrics]


def metrics_weight(
    metrics: Mapping[str, float] | None, ratios: Mapping[str, float]
) -> float | None:
    """Nova's MetricsWeigher: the sum of ratio x value; None when a metric is missing."""
    if metrics is None or missing_metrics(metrics, ratios):
        return None
    return sum(ratio * metrics[name] for name, ratio in ratios.items())
