"""With ``metrics_required``, hosts without fresh values of every metric named in
``metrics_weight_setting`` are not chosen (Nova's MetricsFilter). Metrics are
fresh while the host's agent is up and no older than its heartbeat window."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle, StateKey
from scheduler.plugins.heartbeats import HEARTBEATS, missing_metrics, read_heartbeats

REQUIRED = StateKey[dict[str, float]]("metrics.required")


class MetricsFilter(HostFilter):
    name = "metrics"
    description = (
        "With metrics_required, removes hosts without fresh values of the weighed metrics."
    )

    async def prepare(self, cycle: Cycle) -> None:
        settings = cycle.settings
        if settings.metrics_required and settings.metrics_weight_setting:
            await read_heartbeats(cycle)
            cycle.state.write(REQUIRED, dict(settings.metrics_weight_setting))

    def applies(self, context: Cycle) -> bool:
        return REQUIRED in context.state

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        metrics = context.state.read(HEARTBEATS).fresh_metrics(host.uuid)
        missing = missing_metrics(metrics, context.state.read(REQUIRED))
        if missing:
            return reject(f"metrics: no fresh {', '.join(missing)} from this host")
        return PASS
