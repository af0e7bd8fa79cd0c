"""A flavor as a capacity report asks about it: one unsuffixed request group.

It is written as a candidates request says it (``resources``, ``required``
with ``!`` for forbidden traits and ``in:`` for any-of, ``member_of`` with
``in:`` and ``!``), always in the latest microversion's syntax, and parsed
by the same parsers; its names are resolved by the candidates' prelude, so
an unknown class or trait is the same 400, and an unknown aggregate makes
the flavor fit nowhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.domain.candidates.names import ResolvedGroup, resolve
from placement_api.domain.candidates.prelude import read_prelude
from placement_api.domain.candidates.request import CandidateRequest, QueryItems, RequestGroup
from placement_api.microversion import MAX_VERSION
from placement_api.web.querystring import parse_member_of, parse_required, parse_resources

FLAVOR_KEYS = ("resources", "required", "member_of")


@dataclass(frozen=True)
class Flavor:
    name: str
    group: RequestGroup


@dataclass(frozen=True)
class ResolvedFlavor:
    """``group`` is None when the flavor names an aggregate that does not exist."""

    name: str
    group: ResolvedGroup | None

    @property
    def trait_ids(self) -> frozenset[int]:
        if self.group is None:
            return frozenset()
        return self.group.forbidden.union(*self.group.required)


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


async def resolve_flavors(
    session: AsyncSession, flavors: Sequence[Flavor], skipped: list[str] | None = None
) -> list[ResolvedFlavor]:
    """Each flavor in ids (one prelude round trip each). A flavor naming an
    unknown class or trait is a 400, or, given ``skipped``, left out and
    described there."""
    resolved = []
    for flavor in flavors:
        request = CandidateRequest(groups=(flavor.group,))
        try:
            found = resolve(request, (await read_prelude(session, request)).ids)
        except errors.BadRequest as exc:
            if skipped is None:
                raise
            skipped.append(f"{flavor.name}: {exc.detail}")
            continue
        resolved.append(ResolvedFlavor(flavor.name, found.groups[0] if found else None))
    return resolved
