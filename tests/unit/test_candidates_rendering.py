"""Allocation requests built per layout are those built candidate by
candidate, in every microversion's form: one provider for every slot or
several, one mapping or several, groups without amounts; the JSON text
written from templates is the encoder's, byte for byte."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from placement_api.domain.candidates.combinations import Candidate, Layouts, providers_of
from placement_api.microversion import Version
from placement_api.web.candidates_rendering import answer_text

NAMES = {1: "VCPU", 2: "MEMORY_MB", 3: "DISK_GB", 4: "VGPU"}
UUIDS = {ident: f"uuid-{ident}" for ident in range(1, 9)}
VERSIONS = [Version(1, 10), Version(1, 12), Version(1, 34)]
# Text the encoder escapes (a quote, a backslash, a control character) or
# writes as several bytes: never a uuid the API takes, and still shown right.
ESCAPED_UUIDS = {ident: f'uuid-"{ident}\\\n\N{SNOWMAN}' for ident in UUIDS}


def _expected(
    candidate: Candidate, version: Version, uuids: dict[int, str] = UUIDS
) -> dict[str, Any]:
    """What a candidate shows, built from its allocations and mappings alone."""
    bodies = {
        uuids[provider]: {"resources": {NAMES[c]: amounts[c] for c in sorted(amounts)}}
        for provider, amounts in candidate.allocations.items()
    }
    if version < Version(1, 12):
        listed = [{"resource_provider": {"uuid": u}, **body} for u, body in bodies.items()]
        return {"allocations": listed}
    if version < Version(1, 34):
        return {"allocations": bodies}
    mappings = {s: [uuids[p] for p in ps] for s, ps in candidate.mappings.items()}
    return {"allocations": bodies, "mappings": mappings}


# Per slot, its group's suffix and amounts.
Slots = list[tuple[str, tuple[tuple[int, int], ...]]]
# Slots, then the providers filling them.
SEARCHES = [
    # A flat cloud: one provider for the unsuffixed group's three classes.
    ([("", ((1, 2),)), ("", ((2, 512),)), ("", ((3, 10),))], [(1, 1, 1), (2, 2, 2)]),
    # Two groups that one provider may serve alone, or two providers.
    ([("1", ((1, 1),)), ("2", ((1, 1), (2, 64)))], [(3, 3), (3, 4), (5, 6)]),
    # Two groups that one provider serves alone, every time.
    ([("1", ((1, 1),)), ("2", ((1, 1), (2, 64)))], [(3, 3), (5, 5)]),
    # A group without amounts (mapped, never allocated from) beside one with.
    ([("", ((1, 1),)), ("agg", ())], [(7, 7), (7, 8)]),
    # A NUMA host's unsuffixed group: its classes from one child or two, and
    # a shared disk; several layouts in one answer.
    ([("", ((1, 2),)), ("", ((2, 512),)), ("", ((3, 40),))], [(4, 4, 8), (4, 5, 8), (5, 4, 8)]),
    # Four classes from four providers, or from three.
    (
        [("", ((1, 2),)), ("", ((2, 512),)), ("", ((3, 40),)), ("", ((4, 1),))],
        [(1, 2, 3, 4), (1, 1, 3, 4)],
    ),
]


def _candidates(slots: Slots, chosen: list[tuple[int, ...]]) -> list[Candidate]:
    layouts = Layouts(slots)
    return [layouts.candidate(providers) for providers in chosen]


@pytest.mark.parametrize("version", VERSIONS, ids=str)
@pytest.mark.parametrize(("slots", "chosen"), [*SEARCHES, (SEARCHES[0][0], [])])
@pytest.mark.parametrize("uuids", [UUIDS, ESCAPED_UUIDS], ids=["plain", "escaped"])
def test_the_answer_written_per_layout_is_the_encoders_text_of_each_request(
    slots: Slots, chosen: list[tuple[int, ...]], version: Version, uuids: dict[int, str]
) -> None:
    candidates = _candidates(slots, chosen)
    summaries: dict[str, Any] = {"uuid-1": {"resources": {}}}
    text = answer_text(candidates, uuids, NAMES, orjson.dumps(summaries), version)
    expected = [_expected(candidate, version, uuids) for candidate in candidates]
    assert bytes(text) == orjson.dumps(
        {"allocation_requests": expected, "provider_summaries": summaries}
    )


@pytest.mark.parametrize(("slots", "chosen"), SEARCHES)
def test_the_providers_allocated_from_are_gathered_per_layout(
    slots: Slots, chosen: list[tuple[int, ...]]
) -> None:
    candidates = _candidates(slots, chosen)
    assert providers_of(candidates) == {p for c in candidates for p in c.allocations}
