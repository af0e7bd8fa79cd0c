"""One function per layout that turns a combination of providers into its
allocation request, for the microversions that show allocations as a dict.

Layouts of one, two or three providers listed by their only mapping in the
order they allocate (a NUMA child and a shared disk, say) get a function
written for that many: literal dicts, each uuid looked up once, about a
third faster than a loop over the slots. Any other layout gets the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from placement_api.domain.candidates.combinations import Combination

Body = dict[str, dict[str, int]]
Request = dict[str, Any]
Render = Callable[[Combination], Request]
Mappings = tuple[tuple[str, tuple[int, ...]], ...]


def renderer(
    slots: tuple[int, ...],
    bodies: Sequence[Body],
    mappings: Mappings | None,
    uuids: dict[int, str],
) -> Render:
    """``slots``: the slot of each provider allocated from, with its body;
    ``mappings``: per group suffix, its providers' slots (None: not shown)."""
    suffix = None
    if mappings is not None:
        if len(mappings) != 1 or mappings[0][1] != slots:
            return _any(slots, bodies, mappings, uuids)
        suffix = mappings[0][0]
    if len(slots) == 1:
        return _one(slots[0], bodies[0], suffix, uuids)
    if len(slots) == 2:
        return _two(itemgetter(*slots), bodies, suffix, uuids)
    if len(slots) == 3:
        return _three(itemgetter(*slots), bodies, suffix, uuids)
    return _any(slots, bodies, mappings, uuids)


def _one(slot: int, body: Body, suffix: str | None, uuids: dict[int, str]) -> Render:
    def render(chosen: Combination) -> Request:
        uuid = uuids[chosen[slot]]
        if suffix is None:
            return {"allocations": {uuid: body}}
        return {"allocations": {uuid: body}, "mappings": {suffix: [uuid]}}

    return render


def _two(
    pick: Callable[[Combination], Any], bodies: Sequence[Body], suffix: str | None,
    uuids: dict[int, str],
) -> Render:  # fmt: skip
    first, second = bodies

    def render(chosen: Combination) -> Request:
        a, b = pick(chosen)
        uuid_a, uuid_b = uuids[a], uuids[b]
        allocations = {uuid_a: first, uuid_b: second}
        if suffix is None:
            return {"allocations": allocations}
        return {"allocations": allocations, "mappings": {suffix: [uuid_a, uuid_b]}}

    return render


def _three(
    pick: Callable[[Combination], Any], bodies: Sequence[Body], suffix: str | None,
    uuids: dict[int, str],
) -> Render:  # fmt: skip
    first, second, third = bodies

    def render(chosen: Combination) -> Request:
        a, b, c = pick(chosen)
        uuid_a, uuid_b, uuid_c = uuids[a], uuids[b], uuids[c]
        allocations = {uuid_a: first, uuid_b: second, uuid_c: third}
        if suffix is None:
            return {"allocations": allocations}
        return {"allocations": allocations, "mappings": {suffix: [uuid_a, uuid_b, uuid_c]}}

    return render


def _any(
    slots: tuple[int, ...], bodies: Sequence[Body], mappings: Mappings | None,
    uuids: dict[int, str],
) -> Render:  # fmt: skip
    held = tuple(zip(slots, bodies, strict=True))

    def render(chosen: Combination) -> Request:
        allocations = {uuids[chosen[slot]]: body for slot, body in held}
        if mappings is None:
            return {"allocations": allocations}
        listed = {suffix: [uuids[chosen[s]] for s in group] for suffix, group in mappings}
        return {"allocations": allocations, "mappings": listed}

    return render
