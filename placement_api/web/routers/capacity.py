"""GET /capacity: how many instances of a flavor still fit, and usage figures
(an extension of this service, at every microversion). See docs/capacity.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fastapi import APIRouter
from starlette.responses import Response

from placement_api import errors
from placement_api.auth.policies import capacity as policies
from placement_api.domain.capacity_report.flavor import Flavor
from placement_api.domain.capacity_report.report import BREAKDOWNS, HOST, capacity_reports
from placement_api.domain.capacity_report.zones import ZoneMap
from placement_api.serving.gc_policy import collector_paused
from placement_api.web.capacity_query import parse_flavor
from placement_api.web.deps import ApiDep, DbDep, services
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import OrjsonResponse, json_response
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
        "(comma-separated `host`, `aggregate`, `az`) keeps only those breakdowns; `host` "
        "(and the sharing providers) needs policy `placement:capacity:hosts:read` "
        "(admin or service): without it `by=host` is a 403 and the default leaves them "
        "out. Hosts disabled or down are counted only with `include_unavailable=true`; "
        "`unavailable` says how many there are. The answer's `counting` says how nested "
        "and shared trees were counted; see docs/capacity.md."
    ),
    responses={200: {"model": schemas.CapacityReport}},
)
async def show_capacity(api: ApiDep, db: DbDep) -> Response:
    api.authorize(policies.READ)
    params = api.request.query_params
    query = load_query(schemas.CapacityQuery, dict(params))
    flavor = parse_flavor("", params.multi_items())
    providers = _may_see_providers(api)
    by = query.by.split(",") if query.by else BREAKDOWNS
    if not providers:
        if query.by and HOST in by:
            api.authorize(policies.HOSTS)  # the 403, naming the rule
        by = [b for b in by if b != HOST]
    report = _Report(by, query.include_unavailable == "true", providers)
    zones = services(api.request).capacity.zones
    # The answer's objects die with _answer's frame, before the collector resumes.
    with collector_paused():
        return await _answer(db, flavor, zones, report, api)


@dataclass(frozen=True)
class _Report:
    by: Sequence[str]
    include_unavailable: bool
    # Whether the caller may see per-provider detail (hosts, sharing providers).
    providers: bool


def _may_see_providers(api: ApiDep) -> bool:
    try:
        api.authorize(policies.HOSTS)
    except errors.Forbidden:
        return False
    return True


async def _answer(
    db: DbDep, flavor: Flavor | None, zones: ZoneMap, report: _Report, api: ApiDep
) -> Response:
    async with db.read() as session:
        reports = await capacity_reports(
            session,
            [flavor] if flavor else [],
            zones,
            report.by,
            missed_intervals=api.settings.heartbeat_missed_intervals,
            include_unavailable=report.include_unavailable,
        )
    body = reports[""]
    if not report.providers:
        del body["sharing_providers"]
    return json_response(api.version, body, response_class=OrjsonResponse)
