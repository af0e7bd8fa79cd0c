"""Host liveness (PUT /resource_providers/{uuid}/heartbeat, GET /heartbeats)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class HeartbeatSettings(BaseModel):
    """When a host is down, and what one heartbeat may carry."""

    heartbeat_missed_intervals: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="A host is down once this many of its own heartbeat intervals pass "
        "without a heartbeat: down_after = last_seen + this x interval.",
    )
    heartbeat_max_metrics: int = Field(
        default=64,
        ge=0,
        le=10_000,
        description="Most metrics one heartbeat may carry; more is a 400.",
    )
    heartbeat_max_metric_name_length: int = Field(
        default=64,
        ge=1,
        le=255,
        description="Longest metric name a heartbeat may carry, in characters (400).",
    )
    heartbeat_max_metric_value: float = Field(
        default=float(2**53),
        gt=0,
        description="Largest magnitude of a metric's value (400 beyond it); the default is "
        "the largest integer a float holds exactly.",
    )
