"""A flavor as a capacity report asks about it: one unsuffixed request group,
its names resolved by the candidates' prelude (an unknown class or trait is
the same 400; an unknown aggregate makes the flavor fit nowhere)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.domain.candidates.names import ResolvedGroup, resolve
from placement_api.domain.candidates.prelude import read_prelude
from placement_api.domain.candidates.request import CandidateRequest, RequestGroup


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
