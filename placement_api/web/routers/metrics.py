"""``GET /metrics`` on the API's own port (``PLACEMENT_METRICS_ENABLED=true``).

On this port the scrape needs a token that passes the ``admin_api`` policy
rule: capacity gauges name every host. An unauthenticated scrape is offered
on the separate ``PLACEMENT_METRICS_PORT`` instead, which operators keep off
the public network.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from placement_api.auth.policies import base as base_policies
from placement_api.observability.exposition import metrics_response
from placement_api.web.deps import services
from placement_api.web.fastpath.lean_route import PlacementRoute

router = APIRouter(tags=["metrics"], include_in_schema=False, route_class=PlacementRoute)


@router.get("/metrics")
async def scrape(request: Request) -> Response:
    # Not ApiDep: a scraper's Accept names the text formats, not JSON.
    shared = services(request)
    context = await shared.authenticator.authenticate(request.headers, request.state.request_id)
    request.state.context = context
    shared.policy.authorize(base_policies.ADMIN_API, context)
    return await metrics_response(
        shared.session_factory, shared.capacity_gauges, shared.settings.healthcheck_timeout
    )
