"""One scheduling decision: the request's cycle (prepare hooks), candidates from the
host cache, then per instance capacity, filters, weighers, a random pick among the
best, and the claim; all or nothing. How and why: docs/scheduler.md, "How it is
built" and "The host cache".
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import ChainMap
from dataclasses import replace

from placement_client import PlacementError
from scheduler.answers.explain import (
    ClaimAttempt,
    Explanation,
    Failure,
    InstanceExplanation,
)
from scheduler.answers.results import ScheduleResponse
from scheduler.claiming.claim import Claimer, ReleaseResult, attempt
from scheduler.claiming.claim_batcher import ClaimBatcher
from scheduler.deciding.candidates_report import report_candidates
from scheduler.deciding.choosing import Choice, Chooser, UnplaceableError
from scheduler.deciding.errors import NoValidHostError, PlacementRejectedError
from scheduler.deciding.groups import group_hosts, group_rule, name_hosts
from scheduler.deciding.pipeline import Pipeline
from scheduler.deciding.request_run import RequestRun
from scheduler.placement.change_feed import ChangeFollower
from scheduler.placement.client import MovingFrom, NewClaim, SchedulerPlacement
from scheduler.placement.directory import ProviderDirectory
from scheduler.placement.facts import PlacementFacts
from scheduler.placement.host_cache import CandidateView, Clock, HostCache, ReadMark
from scheduler.placement.host_state import HostState, Reservation
from scheduler.placement.query import QueryParams, candidates_query
from scheduler.plugins.cycle import Cycle, RequestRefused
from scheduler.request.honoured import check_honoured
from scheduler.request.spec import ScheduleRequest, resource_request
from scheduler.settings import SchedulerSettings

LOG = logging.getLogger(__name__)


class Scheduler:
    def __init__(
        self,
        settings: SchedulerSettings,
        client: SchedulerPlacement,
        *,
        pipeline: Pipeline | None = None,
        rng: random.Random | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.settings = settings
        self.client = client
        self.pipeline = pipeline or Pipeline.from_settings(settings)
        self.directory = ProviderDirectory(
            client,
            settings.aggregates,
            default_availability_zone=settings.default_availability_zone,
            cache_seconds=settings.provider_cache_seconds,
        )
        self.facts = PlacementFacts(
            client, self.directory, heartbeats_max_age=settings.host_cache_seconds, clock=clock
        )
        self.host_cache = HostCache(
            client,
            self.directory,
            ttl=settings.host_cache_seconds,
            shapes=settings.host_cache_shapes,
            clock=clock,
        )
        self.feed = ChangeFollower(
            client,
            self.host_cache,
            wait=min(settings.changes_wait_seconds, int(settings.request_timeout / 2)),
            pace=settings.changes_pace_seconds,
        )
        self.claims = ClaimBatcher(
            client,
            consumer_type=settings.consumer_type,
            max_claims=settings.claim_batch_size,
            in_flight=settings.claim_batches_in_flight,
        )
        self.claimer = Claimer(client, self.claims, attempts=settings.claim_attempts)
        self.chooser = Chooser(settings, self.pipeline, rng or random.Random())

    async def start(self) -> None:
        """Begin keeping the host cache current from Placement's change feed (the
        cache lives on its timer when not started, or without the feed)."""
        if self.settings.host_cache_source == "feed":
            await self.feed.start()

    async def aclose(self) -> None:
        await self.feed.aclose()

    async def schedule(
        self,
        spec: ScheduleRequest,
        *,
        moving: MovingFrom | None = None,
        excluded: frozenset[str] = frozenset(),
    ) -> ScheduleResponse:
        """Decide and claim (``spec.dry_run``: decide only). ``moving``: the one consumer
        holds allocations that move to a migration consumer in the claim's write
        (see ``moving``); ``excluded`` hosts are left out before the filters."""
        explanation = Explanation()
        instances = len(spec.consumer_uuids)
        try:
            run = await self._start(spec, explanation, moving, excluded)
            await self._know_the_group(run.cycle, run.view.names)
            if spec.dry_run:
                return await self._decide_only(run, explanation)
        except UnplaceableError as exc:
            explanation.failure = Failure(stage=exc.stage, reason=exc.reason)
            raise NoValidHostError(explanation, instances) from None
        consumers = [str(c) for c in spec.consumer_uuids]
        placed: list[Choice] = []
        in_flight = consumers if len(consumers) > 1 else []
        try:
            refused: dict[str, ClaimAttempt] = {}
            if in_flight:
                placed, refused = await self._place_together(run, explanation)
            for consumer in consumers[len(placed) :]:
                in_flight = [consumer]
                placed.append(await self._place(consumer, run, explanation, refused))
        except UnplaceableError as exc:
            index = len(placed)
            explanation.failure = Failure(
                stage=exc.stage,
                reason=exc.reason,
                instance_index=index,
                consumer_uuid=consumers[index],
            )
            await self._roll_back(placed, explanation)
            raise NoValidHostError(explanation, instances) from None
        except BaseException:
            # Placement failed or the request was cancelled: the claims in flight may have
            # been written even though the answer was lost, so they are given back too
            # (not a move's: its consumer held allocations before; revert undoes it).
            if moving is None:
                await asyncio.shield(self._roll_back(placed, explanation, *in_flight))
            raise
        return ScheduleResponse(selections=[p.selection for p in placed], explanation=explanation)

    async def release(self, consumers: list[str]) -> ReleaseResult:
        result = await self.claimer.release(consumers)
        if result.released:
            self.host_cache.invalidate()
        return result

    async def _start(
        self,
        spec: ScheduleRequest,
        explanation: Explanation,
        moving: MovingFrom | None = None,
        excluded: frozenset[str] = frozenset(),
    ) -> RequestRun:
        mark = self.host_cache.mark()
        check_honoured(spec, self.settings)
        cycle = Cycle(spec, self.settings, self.facts)
        try:
            await self.pipeline.prepare(cycle)
        except RequestRefused as refused:
            raise UnplaceableError("request", str(refused)) from None
        terms = cycle.terms
        request = resource_request(
            spec, terms.in_tree, terms.member_of, terms.not_member_of, self.settings.pci_alias
        )
        limit = None if terms.unlimited else self.settings.max_allocation_candidates
        query = candidates_query(request, limit)
        view = await self._view(query, mark)
        if not view.hosts and not view.fresh:
            view = await self._view(query, mark, fresh=True)  # nothing cached: ask again
        forced = ", ".join(spec.hints.force_hosts + spec.hints.force_nodes)
        run = RequestRun(query, request, mark, view, view.hosts, cycle, forced)
        run.moving, run.excluded, run.group = moving, excluded, group_rule(spec)
        run.take(view)
        await self._report_candidates(run, explanation)
        await self.pipeline.prepare_hosts(run.hosts, cycle)
        return run

    async def _view(
        self, query: QueryParams, mark: ReadMark, *, fresh: bool = False
    ) -> CandidateView:
        try:
            return await self.host_cache.view(query, since=mark, fresh=fresh)
        except PlacementError as exc:
            if exc.status == 400:
                raise PlacementRejectedError(exc.detail) from exc
            raise

    async def _report_candidates(self, run: RequestRun, explanation: Explanation) -> None:
        await report_candidates(self.client, run, explanation)

    async def _know_the_group(self, cycle: Cycle, names: dict[str, str]) -> None:
        """The candidates' names, and where the server group's members run."""
        cycle.host_names = ChainMap({}, names)
        await self._read_the_group(cycle)

    async def _read_the_group(self, cycle: Cycle) -> None:
        cycle.group_hosts = await group_hosts(self.client, self.directory, cycle.spec)
        await name_hosts(self.directory, cycle)

    async def _place(
        self,
        consumer: str,
        run: RequestRun,
        explanation: Explanation,
        refused: dict[str, ClaimAttempt],
    ) -> Choice:
        report = InstanceExplanation(consumer_uuid=consumer, hosts_considered=len(run.hosts))
        if consumer in refused:
            report.claims.append(refused[consumer])
        explanation.instances.append(report)
        try:
            return await self._place_on(consumer, run, report)
        except UnplaceableError:
            if run.view.fresh:
                raise
        # Refused on a cached answer: read the candidates again and try once more.
        run.take(await self._view(run.query, run.mark, fresh=True))
        await self._report_candidates(run, explanation)
        await self.pipeline.prepare_hosts(run.hosts, run.cycle)
        run.cycle.host_names.maps.append(run.view.names)
        retry = InstanceExplanation(
            consumer_uuid=consumer, hosts_considered=len(run.hosts), claims=report.claims
        )
        explanation.instances[-1] = retry
        return await self._place_on(consumer, run, retry)

    async def _place_on(
        self, consumer: str, run: RequestRun, report: InstanceExplanation
    ) -> Choice:
        while True:
            ranking = self.chooser.rank(run.hosts, run.cycle)
            self.chooser.move_on(ranking)
            ranking.explain(report)
            weighed = ranking.best()
            project_id, user_id = self._owner(run.cycle.spec)
            claim = await self.claimer.claim(
                consumer,
                self.chooser.claim_order(weighed),
                project_id=project_id,
                user_id=user_id,
                group=run.group,
                moving=run.moving,
            )
            report.claims.extend(claim.attempts)
            if not claim.group_refused:
                break
            # Another claim of the group got there first: the refused host leaves this
            # request, and the decision is made again on where the group runs now.
            run.lost.update(claim.lost)
            run.hosts = [host for host in run.hosts if host.uuid not in run.lost]
            await self._read_the_group(run.cycle)
        if claim.lost:
            run.lost.update(claim.lost)
            run.hosts = [host for host in run.hosts if host.uuid not in run.lost]
        if claim.host is not None and claim.request is not None and claim.reservation is not None:
            self._claimed(consumer, claim.host, claim.reservation)
        for host in claim.stale:
            await self.host_cache.lost(host)
        if claim.host is None or claim.request is None or claim.reservation is None:
            raise UnplaceableError("claim", claim.why_unclaimed())
        return self.chooser.chose(
            consumer,
            claim.host,
            claim.request,
            claim.reservation,
            weighed,
            run.lost,
            run.cycle,
            report,
        )

    def _claimed(self, consumer: str, host: HostState, reservation: Reservation) -> None:
        """Placement wrote ``consumer``'s claim on ``host``: the cache holds its usage
        until the feed reports it, and the host counts one more consumer."""
        self.host_cache.claimed(consumer, reservation)
        self.directory.note_consumer(host.uuid, +1)

    async def _place_together(
        self, run: RequestRun, explanation: Explanation
    ) -> tuple[list[Choice], dict[str, ClaimAttempt]]:
        """Decide every instance in memory, then claim for all of them in one POST
        /allocations, which Placement writes all or nothing. When an instance does not
        fit or Placement refuses, nothing was written: no choices (with the refusals),
        and the instances are placed one claim at a time, which copes with both."""
        spec = run.cycle.spec
        trial, reports, chosen = run.cycle.trial(), [], []
        try:
            for consumer in (str(c) for c in spec.consumer_uuids):
                report = InstanceExplanation(
                    consumer_uuid=consumer, hosts_considered=len(run.hosts)
                )
                reports.append(report)
                chosen.append(self.chooser.reserve_best(consumer, run.hosts, trial, report))
            project_id, user_id = self._owner(spec)
            outcome = await self.claims.claim(
                [NewClaim(c.consumer, c.request, project_id, user_id, run.group) for c in chosen]
            )
        except BaseException as exc:
            for choice in chosen:
                choice.reservation.undo()
            if isinstance(exc, UnplaceableError):
                return [], {}
            raise
        if not outcome.claimed:
            for choice in chosen:
                choice.reservation.undo()
            why = f"refused with the request's other instances: {outcome.detail}"
            refusal = replace(outcome, detail=why)
            return [], {c.consumer: attempt(c.host, refusal) for c in chosen}
        for choice, report in zip(chosen, reports, strict=True):
            self._claimed(choice.consumer, choice.host, choice.reservation)
            report.claims.append(attempt(choice.host, outcome))
        explanation.instances.extend(reports)
        return chosen, {}

    async def _decide_only(self, run: RequestRun, explanation: Explanation) -> ScheduleResponse:
        """A dry run: every instance decided as the real request would (each seeing the
        ones before it, a cached answer read again before refusing), nothing claimed."""
        chosen: list[Choice] = []
        consumers = [str(c) for c in run.cycle.spec.consumer_uuids]
        try:
            for index, consumer in enumerate(consumers):
                report = InstanceExplanation(
                    consumer_uuid=consumer, hosts_considered=len(run.hosts)
                )
                explanation.instances.append(report)
                try:
                    chosen.append(self._reserve(consumer, run, report))
                except UnplaceableError as exc:
                    if run.view.fresh or chosen:
                        explanation.failure = Failure(
                            stage=exc.stage,
                            reason=exc.reason,
                            instance_index=index,
                            consumer_uuid=consumer,
                        )
                        raise NoValidHostError(explanation, len(consumers)) from None
                    run.take(await self._view(run.query, run.mark, fresh=True))
                    await self._report_candidates(run, explanation)
                    await self.pipeline.prepare_hosts(run.hosts, run.cycle)
                    run.cycle.host_names.maps.append(run.view.names)
                    report.hosts_considered = len(run.hosts)
                    chosen.append(self._reserve(consumer, run, report))
        finally:
            for choice in chosen:
                choice.reservation.undo()
        selections = [choice.selection for choice in chosen]
        return ScheduleResponse(selections=selections, explanation=explanation, dry_run=True)

    def _reserve(self, consumer: str, run: RequestRun, report: InstanceExplanation) -> Choice:
        return self.chooser.reserve_best(consumer, run.hosts, run.cycle, report, move_on=False)

    def _owner(self, spec: ScheduleRequest) -> tuple[str, str]:
        return (
            spec.project_id or self.settings.default_project_id,
            spec.user_id or self.settings.default_user_id,
        )

    async def _roll_back(
        self, placed: list[Choice], explanation: Explanation, *in_flight: str
    ) -> None:
        consumers = [entry.consumer for entry in placed] + list(in_flight)
        if not consumers:
            return
        result = await self.claimer.release(consumers)
        for entry in placed:
            self.directory.note_consumer(entry.host.uuid, -1)
            entry.reservation.undo()
        self.host_cache.invalidate()  # rare, and the amounts given back may predate a read
        explanation.released = result.released
        if result.failed:
            failed = "; ".join(f"{c}: {why}" for c, why in result.failed.items())
            LOG.error("claims of a failed request could not be released: %s", failed)
            if explanation.failure is not None:
                explanation.failure.reason += f" (could not release {failed})"
