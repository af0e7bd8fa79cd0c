"""Filter with reasons and counts, then weigh: normalise to 0..1, multiply, sum.

Each weigher's raw values are scaled over the hosts being weighed
(lowest 0, highest 1; all equal gives 0 to all), multiplied by the
configured multiplier and summed. The ``pack`` strategy negates the
multipliers of resource weighers, so the same weighers bin-pack instead of
spreading; the ``chance`` strategy runs no weigher. A weigher with multiplier
0 is not run (nor prepared).

Before a request's candidates are read, the plugins that will run prepare it
(``prepare``), in the configured order: filters, then weighers.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.answers.explain import (
    FilterReport,
    HostNote,
    HostWeights,
    RejectedHost,
    WeightTerm,
)
from scheduler.placement.host_state import HostState
from scheduler.plugins import FILTERS, WEIGHERS, external
from scheduler.plugins.base import HostFilter, HostWeigher, Plugin
from scheduler.plugins.cycle import Cycle
from scheduler.settings import SchedulerSettings

FORCED_SKIP = "hosts are forced (force_hosts/force_nodes): filter not run"


class UnknownPluginError(ValueError):
    pass


@dataclass(frozen=True)
class _Scores:
    """Every weigher's raw and normalised values, one column per weigher; the term of
    a weigher that does not apply is the same for every host (None: it applies)."""

    names: tuple[str, ...]
    multipliers: tuple[float, ...]
    raw: tuple[list[float], ...]
    normalised: tuple[list[float], ...]
    constant: tuple[WeightTerm | None, ...]


@dataclass(slots=True)
class WeighedHost:
    host: HostState
    total: float
    scores: _Scores
    index: int
    _report: HostWeights | None = None

    def report(self) -> HostWeights:
        """Built on demand (only the reported hosts need it), once."""
        if self._report is None:
            i, scores = self.index, self.scores
            terms = [
                constant
                or WeightTerm(
                    weigher=name,
                    raw=raw[i],
                    normalised=round(normalised[i], 6),
                    multiplier=multiplier,
                    weighted=round(normalised[i] * multiplier, 6),
                )
                for name, multiplier, raw, normalised, constant in zip(
                    scores.names,
                    scores.multipliers,
                    scores.raw,
                    scores.normalised,
                    scores.constant,
                    strict=True,
                )
            ]
            self._report = HostWeights(
                host=self.host.name, uuid=self.host.uuid, total=round(self.total, 6), terms=terms
            )
        return self._report


@dataclass(frozen=True)
class EnabledWeigher:
    plugin: HostWeigher
    multiplier: float


def normalise(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    return [(value - low) / (high - low) for value in values]


class Pipeline:
    def __init__(
        self,
        filters: Sequence[HostFilter],
        weighers: Sequence[EnabledWeigher],
        max_rejections: int = 25,
    ) -> None:
        self.filters = list(filters)
        self.weighers = [w for w in weighers if w.multiplier != 0]
        # The term of a weigher that does not apply to a request, shared by every host.
        self._zero_terms = tuple(_zero(w) for w in self.weighers)
        self.max_rejections = max_rejections

    @classmethod
    def from_settings(cls, settings: SchedulerSettings) -> Pipeline:
        filters = external.filters_with(settings.enabled_filters, FILTERS)
        known = external.weighers_with(
            [*settings.enabled_weighers, *settings.weigher_multipliers], WEIGHERS
        )
        _check_known("filter", settings.enabled_filters, filters, external.FILTER_GROUP)
        _check_known("weigher", settings.enabled_weighers, known, external.WEIGHER_GROUP)
        multiplied = list(settings.weigher_multipliers)
        _check_known("weigher multiplier", multiplied, known, external.WEIGHER_GROUP)
        weighers = []
        for name in [] if settings.strategy == "chance" else settings.enabled_weighers:
            plugin = known[name]()
            sign = -1.0 if settings.strategy == "pack" and plugin.follows_strategy else 1.0
            multiplier = settings.weigher_multipliers.get(name, 1.0) * sign
            weighers.append(EnabledWeigher(plugin, multiplier))
        return cls(
            [filters[name]() for name in settings.enabled_filters],
            weighers,
            settings.explain_max_rejections,
        )

    def _running(self, forced: bool) -> list[Plugin]:
        filters = [f for f in self.filters if f.runs_on_forced_hosts or not forced]
        return [*filters, *(w.plugin for w in self.weighers)]

    async def prepare(self, cycle: Cycle) -> None:
        """Every plugin that will run prepares the request, one after the other (the
        query terms they add keep one order, so a request shape stays one shape)."""
        for plugin in self._running(cycle.spec.hints.forces_hosts):
            await plugin.prepare(cycle)

    async def prepare_hosts(self, hosts: Sequence[HostState], cycle: Cycle) -> None:
        for plugin in self._running(cycle.spec.hints.forces_hosts):
            await plugin.prepare_hosts(hosts, cycle)

    def run_filters(
        self, hosts: list[HostState], context: Cycle
    ) -> tuple[list[HostState], list[FilterReport]]:
        """The hosts every filter passes, and one report per filter that ran."""
        reports = []
        for host_filter in self.filters:
            if not hosts:
                break
            if context.forced and not host_filter.runs_on_forced_hosts:
                reports.append(
                    FilterReport(
                        name=host_filter.name,
                        hosts_in=len(hosts),
                        hosts_out=len(hosts),
                        skipped=FORCED_SKIP,
                    )
                )
                continue
            hosts, report = self._apply(host_filter, hosts, context)
            reports.append(report)
        return hosts, reports

    def _apply(
        self, host_filter: HostFilter, hosts: list[HostState], context: Cycle
    ) -> tuple[list[HostState], FilterReport]:
        if not host_filter.applies(context):
            everyone = len(hosts)
            return hosts, FilterReport(name=host_filter.name, hosts_in=everyone, hosts_out=everyone)
        passed: list[HostState] = []
        rejected: list[RejectedHost] = []
        noted: list[HostNote] = []
        rejections = 0
        for host, verdict in zip(hosts, host_filter.verdicts(hosts, context), strict=True):
            if verdict.passed:
                passed.append(host)
                if verdict.reason and len(noted) < self.max_rejections:
                    noted.append(HostNote(host=host.name, uuid=host.uuid, note=verdict.reason))
                continue
            rejections += 1
            if len(rejected) < self.max_rejections:
                rejected.append(RejectedHost(host=host.name, uuid=host.uuid, reason=verdict.reason))
        report = FilterReport(
            name=host_filter.name,
            hosts_in=len(hosts),
            hosts_out=len(passed),
            rejected=rejected,
            rejected_not_listed=rejections - len(rejected),
            noted=noted,
        )
        return passed, report

    def weigh(
        self, hosts: list[HostState], context: Cycle, best: int | None = None
    ) -> list[WeighedHost]:
        """The hosts, best first (ties keep Placement's order); only the ``best`` first
        when given."""
        if not hosts:
            return []
        zeros = [0.0] * len(hosts)
        applying = [w.plugin.applies(context) for w in self.weighers]
        raw = tuple(
            w.plugin.raw_weights(hosts, context) if applies else zeros
            for w, applies in zip(self.weighers, applying, strict=True)
        )
        scores = _Scores(
            names=tuple(w.plugin.name for w in self.weighers),
            multipliers=tuple(w.multiplier for w in self.weighers),
            raw=raw,
            # A column that does not apply is all zeros: normalised it is itself.
            normalised=tuple(
                normalise(column) if applies else column
                for column, applies in zip(raw, applying, strict=True)
            ),
            constant=tuple(
                None if applies else zero
                for zero, applies in zip(self._zero_terms, applying, strict=True)
            ),
        )
        totals = zeros
        for multiplier, column, applies in zip(
            scores.multipliers, scores.normalised, applying, strict=True
        ):
            if applies:  # a weigher that does not apply adds 0 to every host
                totals = [
                    total + value * multiplier for total, value in zip(totals, column, strict=True)
                ]
        order = range(len(hosts))
        if best is None:
            ranked = sorted(order, key=totals.__getitem__, reverse=True)
        else:  # heapq.nlargest is stable like sorted: ties keep Placement's order
            ranked = heapq.nlargest(best, order, key=totals.__getitem__)
        return [WeighedHost(hosts[index], totals[index], scores, index) for index in ranked]


def _zero(weigher: EnabledWeigher) -> WeightTerm:
    return WeightTerm(
        weigher=weigher.plugin.name,
        raw=0.0,
        normalised=0.0,
        multiplier=weigher.multiplier,
        weighted=round(0.0 * weigher.multiplier, 6),
    )


def _check_known(kind: str, names: Sequence[str], known: Mapping[str, object], group: str) -> None:
    unknown = [name for name in names if name not in known]
    if unknown:
        available = ", ".join(external.available(known, group))
        raise UnknownPluginError(f"unknown {kind} {', '.join(unknown)}; available: {available}")
