"""``GET``/``HEAD /healthcheck``: no token needed, for load balancers.

Anyone gets the status and the reason; a caller whose token passes the
``admin_api`` policy rule also gets the details (database latency, versions).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from placement_api import errors
from placement_api.auth.policies import base as base_policies
from placement_api.observability import health
from placement_api.web.deps import services
from placement_api.web.fastpath.lean_route import PlacementRoute

router = APIRouter(tags=["health"], route_class=PlacementRoute)


def _text_or_json(example: str) -> dict[str, object]:
    return {
        "text/plain": {"schema": {"type": "string"}, "example": example},
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"detailed": {"type": "boolean"}, "reasons": {"type": "array"}},
            }
        },
    }


_DESCRIPTION = (
    "Whether this worker can serve requests (its database answers), as "
    "oslo.middleware's healthcheck reports it: 200 or 503, with the reasons as "
    "text/plain or, if the Accept header prefers it, JSON. Callers allowed the "
    "`admin_api` policy rule get details."
)


@router.get(
    "/healthcheck",
    operation_id="healthcheck",
    description=_DESCRIPTION,
    responses={
        200: {"description": "Healthy.", "content": _text_or_json("OK")},
        503: {
            "description": "Unhealthy; the body gives the reasons.",
            "content": _text_or_json("database unavailable"),
        },
    },
)
async def healthcheck(request: Request) -> Response:
    results = await _check(request)
    healthy = all(result.available for result in results)
    media_type = health.preferred_media_type(request.headers.get("accept"))
    body = health.render_body(results, media_type, detailed=await _is_admin(request))
    return Response(body, status_code=200 if healthy else 503, media_type=media_type)


@router.head(
    "/healthcheck",
    operation_id="healthcheckHead",
    description="The status of GET /healthcheck without a body: 204 or 503.",
    status_code=204,
    responses={204: {"description": "Healthy."}, 503: {"description": "Unhealthy."}},
)
async def healthcheck_head(request: Request) -> Response:
    healthy = all(result.available for result in await _check(request))
    return Response(status_code=204 if healthy else 503, media_type="text/plain")


async def _check(request: Request) -> list[health.CheckResult]:
    settings = services(request).settings
    results = [await health.check_database(request.app.state.engine, settings.healthcheck_timeout)]
    disabled = health.check_disable_file(settings.healthcheck_disable_file)
    if disabled is not None:
        results.append(disabled)
    return results


async def _is_admin(request: Request) -> bool:
    shared = services(request)
    try:
        context = await shared.authenticator.authenticate(request.headers, request.state.request_id)
        shared.policy.authorize(base_policies.ADMIN_API, context)
    except (errors.Unauthorized, errors.Forbidden, errors.ServiceUnavailable):
        # No details, but still the status: a health check never fails on auth.
        return False
    return True
