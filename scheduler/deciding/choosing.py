"""Deciding in memory, for one instance: capacity, filters, weighers, the order to
claim hosts in, and the alternates offered with the selection. No I/O here: the
engine reads candidates and writes claims.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from scheduler.answers.explain import (
    InstanceExplanation,
    Stage,
    emptied_by_capacity,
    emptied_by_filter,
)
from scheduler.answers.results import Alternate, ProviderRef, Selection
from scheduler.deciding import feasible
from scheduler.deciding.pipeline import Pipeline, WeighedHost
from scheduler.placement.client import AllocationRequest
from scheduler.placement.host_state import HostState, Reservation
from scheduler.plugins.cycle import Cycle
from scheduler.settings import SchedulerSettings


class UnplaceableError(Exception):
    def __init__(self, stage: Stage, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


@dataclass
class Choice:
    consumer: str
    host: HostState
    request: AllocationRequest
    reservation: Reservation
    selection: Selection


@dataclass(frozen=True)
class Ranking:
    """One ranking of the hosts and what the search behind it examined."""

    search: feasible.Search
    hosts: int
    wanted: int  # 0: every host was examined
    start: int
    explain_top_hosts: int
    weighed: list[WeighedHost] = field(default_factory=list)
    picked_at_random: bool = False

    def explain(self, report: InstanceExplanation) -> None:
        found = self.search
        report.hosts_examined = found.examined
        report.hosts_with_room = found.with_room
        report.capacity_rejected = found.capacity_rejected
        report.filters = found.filters
        if found.examined < self.hosts:
            report.search_stopped = (
                f"stopped after {len(found.feasible)} feasible hosts of {self.hosts} "
                f"({found.examined} examined; feasible_hosts_to_score is {self.wanted})"
            )
        if self.picked_at_random:
            report.picked_at_random = True
        if found.feasible:
            report.weighed = [w.report() for w in self.weighed[: self.explain_top_hosts]]

    def best(self) -> list[WeighedHost]:
        """The weighed hosts, best first; with none, ``UnplaceableError`` naming the stage
        that emptied the list."""
        if not self.search.with_room:
            raise UnplaceableError("capacity", emptied_by_capacity(self.search.capacity_rejected))
        if not self.search.feasible:
            raise UnplaceableError("filter", emptied_by_filter(self.search.filters[-1]))
        return self.weighed


class Chooser:
    def __init__(self, settings: SchedulerSettings, pipeline: Pipeline, rng: random.Random) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.rng = rng
        # Claims, alternates and the explanation look no further down the ranking.
        self._hosts_needed = (
            settings.host_subset_size
            + settings.claim_attempts
            + settings.max_attempts
            + settings.explain_top_hosts
        )
        # Where the next search for feasible hosts begins (see ``feasible``).
        self._next_start = rng.randrange(1 << 30)

    def rank(self, hosts: Sequence[HostState], context: Cycle) -> Ranking:
        """The hosts with room that every filter passes, best first. Only the first
        ``feasible_hosts_to_score`` hosts found feasible are weighed. Changes nothing:
        the caller moves the cursor on (``move_on``) and explains (``Ranking.explain``)."""
        chance = self.settings.strategy == "chance"
        wanted = self.settings.feasible_hosts_to_score
        if len(hosts) <= wanted or chance:
            wanted = 0  # all of them: keep Placement's order (chance picks among every one)
        start = self._next_start if wanted else 0
        found = feasible.search(
            self.pipeline,
            hosts,
            context,
            wanted=wanted,
            start=start,
            first=context.hosts_to_examine_first(),
            max_rejections=self.settings.explain_max_rejections,
        )
        ranking = Ranking(found, len(hosts), wanted, start, self.settings.explain_top_hosts)
        if not found.feasible:
            return ranking
        feasible_hosts = found.feasible
        if chance:  # no weigher runs: the order is the random pick
            feasible_hosts = self.rng.sample(feasible_hosts, len(feasible_hosts))
        weighed = self.pipeline.weigh(feasible_hosts, context, best=self._hosts_needed)
        return replace(ranking, weighed=weighed, picked_at_random=chance)

    def move_on(self, ranking: Ranking) -> None:
        """The next search for feasible hosts begins where this ranking's stopped."""
        if ranking.wanted:
            self._next_start = ranking.start + ranking.search.examined

    def claim_order(self, weighed: list[WeighedHost]) -> list[HostState]:
        """A random one of the best ``host_subset_size`` first, then by weight."""
        best = weighed[: self.settings.host_subset_size]
        first = self.rng.choice(best)
        return [first.host] + [w.host for w in weighed if w is not first]

    def reserve_best(
        self,
        consumer: str,
        hosts: Sequence[HostState],
        context: Cycle,
        report: InstanceExplanation,
        *,
        move_on: bool = True,
    ) -> Choice:
        """Rank, take the first host of the claim order and reserve its capacity, without
        claiming it: for claims made together later (or none: a dry run, which leaves
        where the next search starts alone)."""
        ranking = self.rank(hosts, context)
        if move_on:
            self.move_on(ranking)
        ranking.explain(report)
        weighed = ranking.best()
        host = self.claim_order(weighed)[0]
        request = host.fitting_request()
        assert request is not None  # ranked hosts all have room
        reservation = host.consume(request)
        return self.chose(consumer, host, request, reservation, weighed, set(), context, report)

    def chose(
        self,
        consumer: str,
        host: HostState,
        request: AllocationRequest,
        reservation: Reservation,
        weighed: list[WeighedHost],
        lost: set[str],
        context: Cycle,
        report: InstanceExplanation,
    ) -> Choice:
        """A host was chosen for ``consumer``: later instances of the request see it,
        the report names it, and the selection offers the alternates."""
        context.record_placement(host.uuid, host.name)
        report.chosen = next(w.report() for w in weighed if w.host is host)
        return Choice(
            consumer,
            host,
            request,
            reservation,
            self._selection(consumer, host, request, weighed, lost),
        )

    def _selection(
        self,
        consumer: str,
        chosen: HostState,
        request: AllocationRequest,
        weighed: list[WeighedHost],
        lost: set[str],
    ) -> Selection:
        return Selection(
            consumer_uuid=consumer,
            provider=ProviderRef(uuid=chosen.uuid, name=chosen.name),
            allocations=request.allocations,
            mappings=request.mappings,
            alternates=self._alternates(weighed, chosen, lost),
        )

    def _alternates(
        self, weighed: list[WeighedHost], chosen: HostState, lost: set[str]
    ) -> list[Alternate]:
        alternates: list[Alternate] = []
        for entry in weighed:
            if len(alternates) >= self.settings.max_attempts - 1:
                break
            host = entry.host
            request = host.fitting_request()
            if host is chosen or host.uuid in lost or request is None:
                continue
            provider = ProviderRef(uuid=host.uuid, name=host.name)
            alternates.append(Alternate(provider=provider, allocation_request=request))
        return alternates
