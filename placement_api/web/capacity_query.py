"""A flavor written as a candidates request says it (``resources``,
``required`` with ``!`` and ``in:``, ``member_of`` with ``in:`` and ``!``),
always in the latest microversion's syntax: ``GET /capacity`` and
``placement-api capacity --flavor`` parse it here."""

from __future__ import annotations

from placement_api import errors
from placement_api.domain.candidates.request import RequestGroup
from placement_api.domain.capacity_report.flavor import Flavor
from placement_api.microversion import MAX_VERSION
from placement_api.web.candidates_query import QueryItems
from placement_api.web.querystring import parse_member_of, parse_required, parse_resources

FLAVOR_KEYS = ("resources", "required", "member_of")


def parse_flavor(name: str, items: QueryItems) -> Flavor | None:
    """The flavor the query items describe; None when they name no resources."""
    values = {key: [v for k, v in items if k == key] for key in FLAVOR_KEYS}
    if len(values["resources"]) > 1:
        raise errors.BadRequest(
            "Query parameter 'resources' may be specified only once.",
            code=errors.QUERY_DUPLICATE_KEY,
        )
    if not values["resources"]:
        if values["required"] or values["member_of"]:
            raise errors.BadRequest(
                "required and member_of need resources: they describe a flavor.",
                code=errors.QUERY_MISSING_VALUE,
            )
        return None
    group = RequestGroup(
        suffix="",
        resources=parse_resources(values["resources"][0]),
        required=parse_required(values["required"], MAX_VERSION),
        member_of=parse_member_of(values["member_of"], MAX_VERSION),
    )
    return Flavor(name, group)
