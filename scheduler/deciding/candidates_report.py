"""What Placement answered for a request, in its explanation; when it answered no
host, why (``diagnose``: which part matched nothing; ``failing_terms``: how many
hosts each term removes), raised as the request's refusal."""

from __future__ import annotations

from scheduler.answers.explain import (
    Explanation,
    FailingTerm,
    PlacementQuery,
    PlacementReport,
    RejectedHost,
)
from scheduler.deciding.choosing import UnplaceableError
from scheduler.deciding.request_run import RequestRun
from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.diagnose import diagnose
from scheduler.placement.failing_terms import failing_terms
from scheduler.placement.query import query_string


async def report_candidates(
    client: SchedulerPlacement, run: RequestRun, explanation: Explanation
) -> None:
    view = run.view
    report = PlacementReport(
        request=PlacementQuery(query=query_string(run.query), microversion=client.microversion),
        allocation_requests=view.allocation_requests,
        hosts=view.hosts_found,
        narrowed_by=run.cycle.terms.why,
        cache_age_seconds=None if view.fresh else round(run.mark.at - view.fetched_at, 3),
        excluded=[
            RejectedHost(host=h.name, uuid=h.uuid, reason="the source host of the move")
            for h in view.hosts
            if h.uuid in run.excluded
        ],
    )
    explanation.placement = report
    if run.hosts:
        return
    if view.hosts:
        raise UnplaceableError("placement", "the only candidate is the move's source host")
    report.diagnosis = await diagnose(client, run.request)
    terms, counts = await failing_terms(client, run.request)
    report.failing_terms = [FailingTerm(term=term, hosts=hosts) for term, hosts in terms]
    prefix = f"the forced host {run.forced} has no room: " if run.forced else ""
    raise UnplaceableError(
        "placement",
        f"{prefix}Placement returned no allocation candidates for "
        f"GET /allocation_candidates?{report.request.query} "
        f"({'; '.join([*report.diagnosis, counts])})",
    )
