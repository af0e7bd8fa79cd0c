"""The answer of ``GET /allocation_candidates`` as JSON text: its allocation
requests as the microversion shows them, then the summaries' text.

A search's candidates share a few layouts (which slots share a provider,
their amounts, the mappings): all that differs between two candidates of a
layout is which providers fill its slots. So what a layout makes is worked
out once (its ``{"resources": ...}`` bodies, made once per amounts dict),
with the function that writes a candidate's JSON text from it
(``request_renderers``); the microversions before 1.12, which list
allocations, get dicts that share the bodies (the encoder takes shared
objects).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from placement_api.domain.candidates.combinations import Candidate, Layout
from placement_api.microversion import Version
from placement_api.web.request_renderers import Body, Render, quoted_uuids, renderer


class _Shapes:
    """Per layout: its providers' slots and bodies."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.bodies: dict[int, Body] = {}
        self.layouts: dict[int, tuple[tuple[int, Body], ...]] = {}

    def _body(self, amounts: dict[int, int]) -> Body:
        found = self.bodies.get(id(amounts))
        if found is None:
            names = self.names
            resources = {names[c]: amounts[c] for c in sorted(amounts)}
            found = self.bodies[id(amounts)] = {"resources": resources}
        return found

    def of(self, layout: Layout) -> tuple[tuple[int, Body], ...]:
        found = self.layouts.get(id(layout))
        if found is None:
            # Layouts stay alive (held by the candidates): no id is reused.
            held = tuple((slot, self._body(amounts)) for slot, amounts in layout.held)
            found = self.layouts[id(layout)] = held
        return found


def answer_text(
    candidates: Sequence[Candidate],
    uuids: dict[int, str],
    class_names: dict[int, str],
    summaries: bytes,
    version: Version,
) -> bytearray:
    """The answer's JSON text with the summaries' text: written into one
    buffer as it is made, no part of its tens of megabytes copied twice."""
    text = bytearray(b'{"allocation_requests":')
    opening = len(text)
    if version.has("allocations_dict_format"):
        mapped = version.has("candidates_mappings")
        _write_requests(text, candidates, uuids, class_names, mapped=mapped)
    else:
        _write_listed_requests(text, candidates, uuids, class_names)
    if len(text) == opening:
        text += b"["
    else:
        text[opening] = ord("[")  # the first request's comma opens the list
    text += b'],"provider_summaries":'
    text += summaries
    text += b"}"
    return text


def _write_listed_requests(
    text: bytearray,
    candidates: Sequence[Candidate],
    uuids: dict[int, str],
    class_names: dict[int, str],
) -> None:
    """Each request after a comma, as the microversions before 1.12 show it (a
    list of allocations)."""
    shapes = _Shapes(class_names)
    listed = [
        {
            "allocations": [
                {"resource_provider": {"uuid": uuids[chosen[slot]]}, **body}
                for slot, body in shapes.of(layout)
            ]
        }
        for chosen, layout in candidates
    ]
    if listed:
        text += b","
        text += orjson.dumps(listed)[1:-1]  # the list's text without its brackets


def _write_requests(
    text: bytearray,
    candidates: Sequence[Candidate],
    uuids: dict[int, str],
    class_names: dict[int, str],
    *,
    mapped: bool,
) -> None:
    """Each request after a comma, allocations as a dict (1.12), with their
    mappings when ``mapped`` (1.34)."""
    shapes = _Shapes(class_names)
    quoted = quoted_uuids(uuids)
    renders: dict[int, Render] = {}
    for chosen, layout in candidates:
        render = renders.get(id(layout))
        if render is None:
            held = shapes.of(layout)
            slots, bodies = tuple(s for s, _ in held), [body for _, body in held]
            render = renderer(slots, bodies, layout.mapped if mapped else None, quoted)
            renders[id(layout)] = render
        text += render(chosen)
