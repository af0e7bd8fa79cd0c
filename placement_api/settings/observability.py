"""What the API tells operators: metrics, logs and health checks."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class MetricsSettings(BaseModel):
    """GET /metrics, on the API's port and on a port of its own."""

    metrics_enabled: bool = Field(
        default=False,
        description="Serve GET /metrics (Prometheus) on the API's own port, to callers "
        "allowed the admin_api policy rule.",
    )
    metrics_port: int | None = Field(
        default=None,
        description="Also serve /metrics, without authentication, on this port "
        "(`placement-api serve` only); keep it off public networks.",
    )
    metrics_host: str = Field(
        default="127.0.0.1", description="Address the separate metrics port listens on."
    )


class LoggingAndHealthSettings(BaseModel):
    """Log lines and /healthcheck."""

    log_format: Literal["text", "json"] = Field(
        default="text", description="`text` lines or `json` lines (one object per line)."
    )
    access_log: bool = Field(
        default=True,
        description="One log line per request: request id, method, route, status, latency, "
        "user and project.",
    )
    healthcheck_timeout: float = Field(
        default=2.0,
        gt=0,
        description="Seconds /healthcheck waits for the database; also how long /metrics "
        "waits for its inventory figures before it answers openstack_placement_up 0.",
    )
    healthcheck_disable_file: Path | None = Field(
        default=None,
        description="While this file exists /healthcheck answers 503 "
        "(DISABLED BY FILE): takes a node out of a load balancer's rotation.",
    )
