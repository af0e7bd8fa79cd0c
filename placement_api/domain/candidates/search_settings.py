"""What the search is told by the service's settings, and the bounds they
set on one request: how many candidates it may stop after, and how many
trait holders the prelude reads before the windows page through the rest."""

from __future__ import annotations

from dataclasses import dataclass

from placement_api.domain.candidates import windowing
from placement_api.domain.candidates.request import CandidateRequest


@dataclass(frozen=True)
class SearchSettings:
    randomize: bool = False
    # Most candidates generated per request; negative means no cap.
    max_candidates: int = -1
    # Longest the search computes before letting the worker's other work run.
    slice_seconds: float = 0.02
    # What provider summaries report (by microversion).
    all_classes: bool = True
    with_traits: bool = True


def stop_after(request: CandidateRequest, settings: SearchSettings) -> int | None:
    bounds = [request.limit] if request.limit is not None else []
    if settings.max_candidates >= 0:
        bounds.append(settings.max_candidates)
    return min(bounds) if bounds else None


def holder_cap(request: CandidateRequest, settings: SearchSettings) -> int | None:
    """How many holders of each of the unsuffixed group's traits the prelude
    reads: those of the first window's trees at most (more are read page by
    page, ``MemberPages``); all of them when every tree is read anyway (no
    limit, or shuffled)."""
    most = stop_after(request, settings)
    if most is None or settings.randomize:
        return None
    return windowing.POLICY.start(most).size
