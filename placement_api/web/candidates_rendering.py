"""The allocation requests of ``GET /allocation_candidates``, as the
microversion shows them, ready for the encoder.

A search's candidates share a few layouts (which slots share a provider,
their amounts, the mappings): all that differs between two candidates of a
layout is which providers fill its slots. So what a layout makes is worked
out once (its ``{"resources": ...}`` bodies, made once per amounts dict and
shared by every candidate: the encoder takes shared objects), with the
function that makes a candidate's own dicts (``request_renderers``). When
every candidate has one provider for all its slots (a flat cloud's), the
list is written as JSON text from one template per layout
(``encoded_requests``), without a dict per candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from placement_api.domain.candidates.combinations import Candidate, Layout
from placement_api.microversion import Version
from placement_api.web.request_renderers import Body, Render, renderer


class _Shapes:
    """Per layout: its providers' slots and bodies, and the slot of its only
    provider when every mapping lists that one alone (else None)."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.bodies: dict[int, Body] = {}
        self.layouts: dict[int, tuple[tuple[tuple[int, Body], ...], int | None]] = {}

    def _body(self, amounts: dict[int, int]) -> Body:
        found = self.bodies.get(id(amounts))
        if found is None:
            names = self.names
            resources = {names[c]: amounts[c] for c in sorted(amounts)}
            found = self.bodies[id(amounts)] = {"resources": resources}
        return found

    def of(self, layout: Layout) -> tuple[tuple[tuple[int, Body], ...], int | None]:
        found = self.layouts.get(id(layout))
        if found is None:
            held = tuple((slot, self._body(amounts)) for slot, amounts in layout.held)
            alone = None
            if len(held) == 1 and all(slots == (held[0][0],) for _, slots in layout.mapped):
                alone = held[0][0]
            # Layouts stay alive (held by the candidates): no id is reused.
            found = self.layouts[id(layout)] = (held, alone)
        return found


def allocation_requests(
    candidates: Sequence[Candidate],
    uuids: dict[int, str],
    class_names: dict[int, str],
    version: Version,
) -> list[dict[str, Any]]:
    shapes = _Shapes(class_names)
    if not version.has("allocations_dict_format"):
        return [
            {
                "allocations": [
                    {"resource_provider": {"uuid": uuids[chosen[slot]]}, **body}
                    for slot, body in shapes.of(layout)[0]
                ]
            }
            for chosen, layout in candidates
        ]
    mapped = version.has("candidates_mappings")
    renders: dict[int, Render] = {}
    requests: list[dict[str, Any]] = []
    append = requests.append
    for chosen, layout in candidates:
        render = renders.get(id(layout))
        if render is None:
            held = shapes.of(layout)[0]
            slots, bodies = tuple(s for s, _ in held), [body for _, body in held]
            render = renderer(slots, bodies, layout.mapped if mapped else None, uuids)
            renders[id(layout)] = render
        append(render(chosen))
    return requests


def _template(body: Body, mapped: tuple[tuple[str, tuple[int, ...]], ...] | None) -> bytes:
    """The JSON of a one-provider request, with ``%b`` for the provider's
    quoted uuid; the same bytes the encoder writes for its dicts."""
    allocations = b'{"allocations":{%b:' + orjson.dumps(body).replace(b"%", b"%%") + b"}"
    if mapped is None:
        return allocations + b"}"
    mappings = b",".join(
        orjson.dumps(suffix).replace(b"%", b"%%") + b":[%b]" for suffix, _ in mapped
    )
    return allocations + b',"mappings":{' + mappings + b"}}"


def encoded_requests(
    candidates: Sequence[Candidate],
    uuids: dict[int, str],
    class_names: dict[int, str],
    version: Version,
) -> orjson.Fragment | None:
    """The allocation requests as JSON text, when the version shows them as
    dicts and every candidate has one provider for all its slots (a flat
    cloud's); else None (``allocation_requests`` builds them)."""
    if not version.has("allocations_dict_format"):
        return None
    mapped = version.has("candidates_mappings")
    shapes = _Shapes(class_names)
    templates: dict[int, tuple[bytes, int, int]] = {}
    parts: list[bytes] = []
    append = parts.append
    for chosen, layout in candidates:
        found = templates.get(id(layout))
        if found is None:
            held, alone = shapes.of(layout)
            if alone is None:
                return None
            template = _template(held[0][1], layout.mapped if mapped else None)
            # The uuid appears once in the allocations and once per mapping.
            found = templates[id(layout)] = (template, alone, 1 + len(layout.mapped) * mapped)
        template, alone, uses = found
        append(template % ((orjson.dumps(uuids[chosen[alone]]),) * uses))
    return orjson.Fragment(b"[" + b",".join(parts) + b"]")
