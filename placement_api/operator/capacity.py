"""``placement-api capacity``: the capacity report, read from the database.

The command reads the database through the same domain functions as
``GET /capacity`` (as ``audit`` does): it runs where the API's settings
are (database URL, aggregates and flavors files), needs no token, and
answers while the API is down; the numbers cannot differ from the API's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy.exc import DBAPIError

from flavors.amounts import placement_form
from placement_api.db.engine import create_engine
from placement_api.db.outage import is_unavailable
from placement_api.db.session import unit_of_work
from placement_api.domain.capacity_report.flavor import Flavor
from placement_api.domain.capacity_report.report import capacity_reports
from placement_api.domain.capacity_report.zones import ZoneMap
from placement_api.domain.changes import recording_session_factory
from placement_api.services.standard_names import write_standard_names
from placement_api.serving.gc_policy import collector_paused
from placement_api.settings import Settings
from placement_api.web.capacity_query import parse_flavor

# ``:required=`` and ``:member_of=`` end the resources of a --flavor value.
_PART = re.compile(r":(?=(?:required|member_of)=)")


def parse_flavor_option(text: str) -> Flavor | str:
    """``NAME=RC:N,...[:required=...][:member_of=...]`` (``RC=N`` too) as a flavor, or a bare
    ``NAME`` (a flavor of the flavors file) as that name."""
    name, separator, spec = text.partition("=")
    if not separator:
        return name
    resources, *rest = _PART.split(spec)
    items = [
        ("resources", placement_form(resources)),
        *(tuple(part.split("=", 1)) for part in rest),
    ]
    flavor = parse_flavor(name, [(key, value) for key, value in items])
    assert flavor is not None  # it has resources
    return flavor


async def run_capacity(
    settings: Settings, flavors: Sequence[Flavor], zones: ZoneMap, by: str, *, include: bool
) -> dict[str, dict[str, Any]]:
    """``include``: count hosts disabled or down too."""
    engine = create_engine(settings.database_url, pool_size=1)
    factory = recording_session_factory(engine)
    try:
        # A flavor names standard classes and traits, which a database no server
        # has started on lacks: "no such resource class VCPU" would be wrong there.
        try:
            await write_standard_names(factory)
        except DBAPIError as exc:
            # Credentials that may only read still get the report (of the names
            # present); a database out of reach is said once, by the read's error.
            if is_unavailable(exc):
                raise
        async with unit_of_work(factory, write=False) as session:
            with collector_paused():
                return await capacity_reports(
                    session,
                    flavors,
                    zones,
                    (by,),
                    missed_intervals=settings.heartbeat_missed_intervals,
                    include_unavailable=include,
                )
    finally:
        await engine.dispose()
