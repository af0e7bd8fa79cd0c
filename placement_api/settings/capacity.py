"""The capacity reports (GET /capacity, `placement-api capacity`, the capacity gauges)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class CapacitySettings(BaseModel):
    """The aggregates, zones and flavors the capacity reports name."""

    capacity_aggregates_file: Path | None = Field(
        default=None,
        description="YAML file whose `aggregates` mapping (the scheduler's format: aggregate "
        "uuid -> name, availability_zone, metadata) names aggregates and zones in GET "
        "/capacity, `placement-api capacity` and the capacity gauges; a scheduler "
        "configuration file will do. Read once at start-up: an edit takes effect at the "
        "next start, which a bad or missing file stops (docs/capacity.md).",
    )
    capacity_default_availability_zone: str = Field(
        default="nova",
        description="Zone of hosts in no aggregate that names one, in capacity reports.",
    )
    capacity_flavors_file: Path | None = Field(
        default=None,
        description="A scheduler flavors file (YAML): the flavors whose fits the capacity "
        "gauges report, and `placement-api capacity`'s flavors when none is given. Read "
        "once at start-up: an edit takes effect at the next start, which a bad or missing "
        "file stops (docs/capacity.md).",
    )
    capacity_metrics_interval: float = Field(
        default=60.0,
        ge=0,
        description="Seconds the capacity gauges computed for one scrape are reused by "
        "the next ones (0: computed at every scrape).",
    )
