"""One scheduling decision: candidates -> host states -> per instance: capacity,
filters, weighers, random pick among the best, claim -> selections.

Placement is asked once per request, with one instance's amounts; every
instance after the first sees the consumption of the ones before it (in the
shared ``UsageBook`` and the context). A request is all or nothing: if one
instance cannot be placed, the claims already made for it are released.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from dataclasses import dataclass

from scheduler.claim import Claimer, ClaimResult, ReleaseResult
from scheduler.client import MICROVERSION, PlacementClient, PlacementError
from scheduler.context import SchedulingContext
from scheduler.diagnose import diagnose
from scheduler.directory import ProviderDirectory
from scheduler.explain import (
    Explanation,
    Failure,
    InstanceExplanation,
    PlacementQuery,
    PlacementReport,
    RejectedHost,
    Stage,
    emptied_by_capacity,
    emptied_by_filter,
    no_valid_host_message,
)
from scheduler.host_state import HostState, build_hosts, requests_by_host
from scheduler.ledger import GroupLedger
from scheduler.pipeline import Pipeline, WeighedHost
from scheduler.query import candidates_query, query_string
from scheduler.results import Alternate, ProviderRef, ScheduleResponse, Selection
from scheduler.settings import SchedulerSettings
from scheduler.spec import ScheduleRequest, resource_request

LOG = logging.getLogger(__name__)


class NoValidHostError(Exception):
    def __init__(self, explanation: Explanation, instances: int) -> None:
        self.explanation = explanation
        self.message = no_valid_host_message(explanation, instances)
        super().__init__(self.message)


class PlacementRejectedError(Exception):
    """Placement refused the query built from the request (a 400): the request is wrong."""


class _UnplaceableError(Exception):
    def __init__(self, stage: Stage, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


@dataclass
class _Placed:
    consumer: str
    host: HostState
    selection: Selection


class Scheduler:
    def __init__(
        self,
        settings: SchedulerSettings,
        client: PlacementClient,
        *,
        pipeline: Pipeline | None = None,
        rng: random.Random | None = None,
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
        self.ledger = GroupLedger()
        self.claimer = Claimer(
            client, attempts=settings.claim_attempts, consumer_type=settings.consumer_type
        )
        self.rng = rng or random.Random()

    async def schedule(self, spec: ScheduleRequest) -> ScheduleResponse:
        explanation = Explanation()
        instances = len(spec.consumer_uuids)
        try:
            hosts = await self._candidate_hosts(spec, explanation)
            context = await self._context(spec, hosts)
        except _UnplaceableError as exc:
            explanation.failure = Failure(stage=exc.stage, reason=exc.reason)
            raise NoValidHostError(explanation, instances) from None
        consumers = [str(c) for c in spec.consumer_uuids]
        placed: list[_Placed] = []
        try:
            for consumer in consumers:
                placed.append(await self._place(consumer, spec, hosts, context, explanation))
        except _UnplaceableError as exc:
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
            # Placement failed or the request was cancelled: the claim in flight may have
            # been written even though its answer was lost, so it is given back too.
            in_flight = consumers[len(placed)]
            await asyncio.shield(self._roll_back(placed, explanation, in_flight))
            raise
        if spec.hints.group is not None:
            for entry in placed:
                self.ledger.record(str(spec.hints.group.uuid), entry.consumer, entry.host.uuid)
        return ScheduleResponse(selections=[p.selection for p in placed], explanation=explanation)

    async def release(self, consumers: list[str]) -> ReleaseResult:
        result = await self.claimer.release(consumers)
        for consumer in result.released:
            self.ledger.forget(consumer)
        return result

    async def _candidate_hosts(
        self, spec: ScheduleRequest, explanation: Explanation
    ) -> list[HostState]:
        request = resource_request(spec, in_tree=await self._forced_tree(spec))
        params = candidates_query(request, self.settings.max_allocation_candidates)
        try:
            response = await self.client.allocation_candidates(params)
        except PlacementError as exc:
            if exc.status == 400:
                raise PlacementRejectedError(exc.detail) from exc
            raise
        by_host = requests_by_host(response)
        report = PlacementReport(
            request=PlacementQuery(query=query_string(params), microversion=MICROVERSION),
            allocation_requests=len(response.allocation_requests),
            hosts=len(by_host),
        )
        explanation.placement = report
        if not by_host:
            report.diagnosis = await diagnose(self.client, request)
            forced = ", ".join(spec.hints.force_hosts + spec.hints.force_nodes)
            prefix = f"the forced host {forced} has no room: " if forced else ""
            raise _UnplaceableError(
                "placement",
                f"{prefix}Placement returned no allocation candidates for "
                f"GET /allocation_candidates?{report.request.query} "
                f"({'; '.join(report.diagnosis)})",
            )
        metadata = await self.directory.metadata(
            list(by_host), with_counts=self.pipeline.needs_instance_counts
        )
        return build_hosts(response, metadata)

    async def _forced_tree(self, spec: ScheduleRequest) -> str | None:
        """With one forced host, ask Placement about that tree only (so ``limit`` cannot
        hide it); a forced name Placement does not know fails the request at once."""
        hints = spec.hints
        targets = hints.force_nodes or hints.force_hosts
        if len(targets) != 1:
            return None
        providers = await self.directory.providers()
        if targets[0] in providers:
            return targets[0]
        found = await self.directory.uuid_named(targets[0])
        if found is None:
            raise _UnplaceableError(
                "request", f"forced host {targets[0]} is not a resource provider in Placement"
            )
        return found

    async def _context(self, spec: ScheduleRequest, hosts: list[HostState]) -> SchedulingContext:
        hints = spec.hints
        context = SchedulingContext(
            hints=hints,
            availability_zone=spec.availability_zone,
            extra_specs=spec.extra_specs,
            image=spec.image_properties,
            max_instances_per_host=self.settings.max_instances_per_host,
            host_names={host.uuid: host.name for host in hosts},
        )
        if hints.group is not None:
            members = self.ledger.members(str(hints.group.uuid))
            unknown = [str(m) for m in hints.group.members if str(m) not in members]
            for host, consumers in (await self.directory.hosts_of_consumers(unknown)).items():
                members.update(dict.fromkeys(consumers, host))
            context.group_hosts = Counter(members.values())
        if hints.same_host:
            context.same_host_targets = await self.directory.hosts_of_consumers(
                str(c) for c in hints.same_host
            )
        if hints.different_host:
            context.different_host_targets = await self.directory.hosts_of_consumers(
                str(c) for c in hints.different_host
            )
        await self._name_hosts(context)
        return context

    async def _name_hosts(self, context: SchedulingContext) -> None:
        """Hosts named in explanations may lie outside the candidates (a full host)."""
        mentioned = set(context.group_hosts) | set(context.same_host_targets)
        unnamed = mentioned - set(context.host_names)
        if unnamed:
            records = await self.directory.providers()
            for host in unnamed:
                if host in records:
                    context.host_names[host] = records[host].name

    async def _place(
        self,
        consumer: str,
        spec: ScheduleRequest,
        hosts: list[HostState],
        context: SchedulingContext,
        explanation: Explanation,
    ) -> _Placed:
        report = InstanceExplanation(consumer_uuid=consumer, hosts_considered=len(hosts))
        explanation.instances.append(report)
        weighed = self._rank(hosts, context, report)
        claim = await self.claimer.claim(
            consumer,
            self._claim_order(weighed),
            project_id=spec.project_id or self.settings.default_project_id,
            user_id=spec.user_id or self.settings.default_user_id,
        )
        report.claims = claim.attempts
        lost = set(claim.lost)
        hosts[:] = [host for host in hosts if host.uuid not in lost]
        if claim.host is None or claim.request is None:
            raise _UnplaceableError("claim", _claims_failed(claim))
        chosen, request = claim.host, claim.request
        chosen.consume(request)
        context.record_placement(chosen.uuid, chosen.name)
        self.directory.note_consumer(chosen.uuid, +1)
        report.chosen = next(w.report() for w in weighed if w.host is chosen)
        selection = Selection(
            consumer_uuid=consumer,
            provider=ProviderRef(uuid=chosen.uuid, name=chosen.name),
            allocations=request.allocations,
            mappings=request.mappings,
            alternates=self._alternates(weighed, chosen, lost),
        )
        return _Placed(consumer, chosen, selection)

    def _rank(
        self, hosts: list[HostState], context: SchedulingContext, report: InstanceExplanation
    ) -> list[WeighedHost]:
        fitting: list[HostState] = []
        full: list[HostState] = []
        for host in hosts:
            (fitting if host.fitting_request() is not None else full).append(host)
        report.hosts_with_room = len(fitting)
        report.capacity_rejected = [
            RejectedHost(host=h.name, uuid=h.uuid, reason=h.shortfall())
            for h in full[: self.settings.explain_max_rejections]
        ]
        if not fitting:
            raise _UnplaceableError("capacity", emptied_by_capacity(report.capacity_rejected))
        passed, report.filters = self.pipeline.run_filters(fitting, context)
        if not passed:
            raise _UnplaceableError("filter", emptied_by_filter(report.filters[-1]))
        weighed = self.pipeline.weigh(passed, context)
        report.weighed = [w.report() for w in weighed[: self.settings.explain_top_hosts]]
        return weighed

    def _claim_order(self, weighed: list[WeighedHost]) -> list[HostState]:
        """A random one of the best ``host_subset_size`` first, then by weight."""
        best = weighed[: self.settings.host_subset_size]
        first = self.rng.choice(best)
        return [first.host] + [w.host for w in weighed if w is not first]

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

    async def _roll_back(
        self, placed: list[_Placed], explanation: Explanation, *in_flight: str
    ) -> None:
        consumers = [entry.consumer for entry in placed] + list(in_flight)
        if not consumers:
            return
        result = await self.claimer.release(consumers)
        for entry in placed:
            self.directory.note_consumer(entry.host.uuid, -1)
        explanation.released = result.released
        if result.failed:
            failed = "; ".join(f"{c}: {why}" for c, why in result.failed.items())
            LOG.error("claims of a failed request could not be released: %s", failed)
            if explanation.failure is not None:
                explanation.failure.reason += f" (could not release {failed})"


def _claims_failed(claim: ClaimResult) -> str:
    if not claim.attempts:
        return "no host was left to claim on"
    tried = "; ".join(f"{a.host}: {a.detail or a.outcome}" for a in claim.attempts)
    return f"Placement refused every claim tried ({tried})"
