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
    candidates_index: bool = Field(
        default=True,
        description=(
            "Keep in each API worker a copy of every provider's traits, aggregates and "
            "inventory, kept current from the change feed, and answer a flat cloud's "
            "single-group candidate requests from it without reading those tables."
        ),
    )
    candidates_index_max_providers: int = Field(
        default=100_000,
        ge=0,
        description=(
            "Largest cloud (in providers) the candidates index copies; larger ones are "
            "read from the database (the copy costs about 1.2 KB of each worker's memory "
            "per provider)."
        ),
    )
    candidates_index_max_age: float = Field(
        default=300,
        gt=0,
        description=(
            "Seconds after which a worker reloads its candidates index whole: the change "
            "feed keeps it current with every write made through the API, and this "
            "bounds how long one made outside it by hand-written SQL goes unseen "
            "(`db import` and `audit --fix` start a new feed epoch, which reloads it)."
        ),
    )
