"""GET /capacity: how many instances of a flavor still fit, and usage figures
(an extension of this service, at every microversion). See docs/capacity.md."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter
from starlette.responses import Response

from placement_api.auth.policies import capacity as policies
from placement_api.domain.capacity_report.flavor import Flavor
from placement_api.domain.capacity_report.report import BREAKDOWNS, capacity_reports
from placement_api.domain.capacity_report.zones import ZoneMap
from placement_api.microversion import Version
from placement_api.serving.gc_policy import collector_paused
from placement_api.web.capacity_query import parse_flavor
from placement_api.web.deps import ApiDep, DbDep, services
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.routers.allocation_candidates import OrjsonResponse
from placement_api.web.schemas import capacity as schemas
from placement_api.web.schemas.validation import load_query

router = APIRouter(tags=["capacity"], route_class=PlacementRoute)


@router.get(
    "/capacity",
    operation_id="showCapacity",
    description=(
        "For a flavor given as a candidates request's unsuffixed group (`resources`, "
        "`required` with `!` and `in:`, `member_of`), how many instances still fit: in "
        "total and per host, aggregate and availability zone (`fits`), with usage per "
        "resource class. Without `resources`, the usage figures only. `by` "
        "(comma-separated `host`, `aggregate`, `az`) keeps only those breakdowns. The "
        "answer's `counting` says how nested and shared trees were counted; "
        "see docs/capacity.md."
    ),
    responses={200: {"model": schemas.CapacityReport}},
)
async def show_capacity(api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.READ)
    params = api.request.query_params
    query = load_query(schemas.CapacityQuery, dict(params))
    flavor = parse_flavor("", params.multi_items())
    by = query.by.split(",") if query.by else BREAKDOWNS
    zones = services(api.request).capacity.zones
    # The answer's objects die with _answer's frame, before the collector resumes.
    with collector_paused():
        return await _answer(db, flavor, zones, by, api.version)


async def _answer(
    db: DbDep, flavor: Flavor | None, zones: ZoneMap, by: Sequence[str], version: Version
) -> Response:
    async with db.read() as session:
        reports = await capacity_reports(session, [flavor] if flavor else [], zones, by)
    return json_response(version, reports[""], response_class=OrjsonResponse)
