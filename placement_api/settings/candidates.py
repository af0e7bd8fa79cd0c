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
            "Keep in each API worker a copy of every provider's tree position, traits, "
            "aggregates and inventory, kept current from the change feed, and answer "
            "candidate requests of one unsuffixed group from it without reading those "
            "tables."
        ),
    )
    candidates_index_max_providers: int = Field(
        default=400_000,
        ge=0,
        description=(
            "Largest cloud (in providers) the candidates index copies; larger ones are "
            "read from the database (the copy costs each worker about 0.8 KB of memory per "
            "provider of a nested cloud, 1.3 KB per flat host: 100,000 hosts with two NUMA "
            "children each, 300,000 providers, take about 250 MB)."
        ),
    )
    candidates_index_max_age: float = Field(
        default=300,
        gt=0,
        description=(
            "Seconds within which a worker's candidates index re-reads every provider, a "
            "span of 1,000 at a time: the change feed keeps it current with every write "
            "made through the API, and this bounds how long one made outside it by "
            "hand-written SQL goes unseen (`db import` and `audit --fix` start a new feed "
            "epoch, which reloads it whole; so does a worker whose index went unused for "
            "twice this long)."
        ),
    )
