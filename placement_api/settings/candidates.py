"""How GET /allocation_candidates searches."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CandidatesSettings(BaseModel):
    """Order, cap and pacing of the candidates search."""

    randomize_allocation_candidates: bool = Field(
        default=False,
        description="Shuffle candidates (trees, then providers) instead of ordering them.",
    )
    max_allocation_candidates: int = Field(
        default=10_000,
        description=(
            "Most candidates GET /allocation_candidates generates for one request, whatever "
            "its limit (upstream's option of the same name); -1: no cap, so a request of "
            "many granular groups over wide trees may cost the worker gigabytes."
        ),
    )
    candidates_slice_seconds: float = Field(
        default=0.02,
        gt=0,
        le=1,
        description=(
            "Longest a candidates search computes before it lets the worker's other "
            "requests run (and its own deadline cut it short)."
        ),
    )
