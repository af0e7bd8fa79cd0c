"""Nova's MetricsWeigher over the utilisation hosts report with their heartbeats:
the raw weight is the sum of ratio x value over ``metrics_weight_setting``
(e.g. ``cpu.percent=-1.0,memory.used=-0.5``: busier hosts weigh less), then
normalised like every weigher. A host without fresh values of every named
metric weighs lowest (below every host with them); ``metrics_required`` turns
that into a rejection by the ``metrics`` filter."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import HostWeigher
from scheduler.plugins.cycle import Cycle, StateKey
from scheduler.plugins.heartbeats import HEARTBEATS, metrics_weight, read_heartbeats

RATIOS = StateKey[dict[str, float]]("metrics.ratios")


class MetricsWeigher(HostWeigher):
    name = "metrics"
    description = "Weighs reported utilisation by metrics_weight_setting (name=ratio,...)."

    async def prepare(self, cycle: Cycle) -> None:
        if cycle.settings.metrics_weight_setting:
            await read_heartbeats(cycle)
            cycle.state.write(RATIOS, dict(cycle.settings.metrics_weight_setting))

    def applies(self, context: Cycle) -> bool:
        return RATIOS in context.state

    def raw_weight(self, host: HostState, context: Cycle) -> float:
        return self.raw_weights([host], context)[0]

    def raw_weights(self, hosts: Sequence[HostState], context: Cycle) -> list[float]:
        heartbeats, ratios = context.state.read(HEARTBEATS), context.state.read(RATIOS)
        weights = [metrics_weight(heartbeats.fresh_metrics(h.uuid), ratios) for h in hosts]
        known = [weight for weight in weights if weight is not None]
        if not known:
            return [0.0] * len(hosts)
        # Unavailable: one span below the lowest, so they normalise to 0, the rest above.
        low, high = min(known), max(known)
        unavailable = low - max(high - low, 1.0)
        return [unavailable if weight is None else weight for weight in weights]
